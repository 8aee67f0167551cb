/** Every statement the store sends, with the schema's quoted name filled in. */
export interface Statements {
  append: string
  /**
   * `append` whose expected tails first go through `skein_flow_take` (migration 18): the
   * group's new runs that take a flow slot; its parameters follow `append`'s (`FLOW_TAKE_TYPES`).
   */
  appendAdmitting: string
  /** One append to an existing run, no key, no snapshots: one plain statement. */
  appendOne: string
  read: string
  run: string
  trim: string
  listRuns: string
  deadlines: string
  activeRuns: string
  snapshotLatest: string
  snapshotList: string
  snapshotPrune: string
  /** Commits a transaction that has an xid: its flush covers every earlier async commit. */
  sync: string
  /** The run's tail and lease (after an `appendOne` that matched nothing). */
  runLease: string
  readLease: string
  renewLease: string
  releaseLease: string
  claimDue: string
  markDue: string
  /** Tails of the listed runs (the subscribers' polling fallback). */
  tails: string
  /** `skein_delete_runs(ids, statuses, before, limit, at, reason)` (delete-function.ts). */
  deleteRuns: string
  deleteAtTails: string
}

const ARRAY_TYPES = [
  'text',
  'bigint',
  'text',
  'integer',
  ...['text', 'text', 'text', 'text', 'bigint', 'bigint', 'bigint'],
  // The lease claim: owner (null: none), epoch, expiresAt, now.
  ...['text', 'bigint', 'bigint', 'bigint'],
]
const SNAPSHOT_ARRAY_TYPES = ['text', 'bigint', 'bigint', 'integer', 'text']
/** `skein_flow_take`'s own parameters: request, queue, key, limit, priority; now, hold. */
const FLOW_TAKE_TYPES = ['integer[]', 'text[]', 'text[]', 'integer[]', 'double precision[]']

export const EVENT_COLUMNS =
  'seq, id, ts, type, thread_id, origin, causation_id, effect_id, idempotency_key, event_key, payload'
export const META_COLUMNS =
  'status, kind, definition_name, definition_version, created_at, updated_at, next_deadline_at'

export function statements(s: string, channel: string): Statements {
  // Casts name every parameter's type, so drivers that send untyped text (both do) agree. The
  // events' JSON goes as text, then json: a driver told the parameter is json would encode the
  // (already JSON) string a second time.
  const n = ARRAY_TYPES.length
  const casts = ARRAY_TYPES.map((type, i) => `$${i + 1}::${type}[]`).join(', ')
  const snapshotCasts = SNAPSHOT_ARRAY_TYPES.map((type, i) => `$${n + 2 + i}::${type}[]`).join(', ')
  const m = n + 1 + SNAPSHOT_ARRAY_TYPES.length
  const append = `SELECT o_req, o_outcome, o_tail, o_detail FROM ${s}.skein_append(${casts},
      $${n + 1}::text::json, ${snapshotCasts}, $${m + 1}::boolean, $${m + 2}::boolean)`
  const take = FLOW_TAKE_TYPES.map((type, i) => `$${m + 3 + i}::${type}`).join(', ')
  const f = m + 3 + FLOW_TAKE_TYPES.length
  return {
    append,
    // The expected tails (the second array) pass through skein_flow_take first.
    appendAdmitting: append.replace(
      '$2::bigint[]',
      `${s}.skein_flow_take($2::bigint[], $1::text[], ${take}, $${f}::bigint, $${f + 1}::bigint)`,
    ),
    // The tail check is the UPDATE's own WHERE: the row it locks moved on, or it matched
    // nothing (a conflict, with run_no null). The lease check beside it is `decideClaim`
    // (core/claim-rule.ts) restated: a renewal, or a take-over of a free lease with a greater
    // epoch; `describeLeaseStore` holds it to the rule's cases (a plain append takes this path). Meta columns keep their values when status is
    // null (no meta). The events insert reads the run_no the UPDATE returned.
    appendOne: `WITH run AS (
        UPDATE ${s}.skein_runs SET tail = $3,
          status = coalesce($4, status),
          kind = CASE WHEN $4::text IS NULL THEN kind ELSE $5 END,
          definition_name = CASE WHEN $4::text IS NULL THEN definition_name ELSE $6 END,
          definition_version = CASE WHEN $4::text IS NULL THEN definition_version ELSE $7 END,
          created_at = CASE WHEN $4::text IS NULL THEN created_at ELSE $8::bigint END,
          updated_at = CASE WHEN $4::text IS NULL THEN updated_at ELSE $9::bigint END,
          next_deadline_at = CASE WHEN $4::text IS NULL THEN next_deadline_at ELSE $10::bigint END,
          lease_owner = coalesce($13, lease_owner),
          lease_epoch = CASE WHEN $13::text IS NULL THEN lease_epoch ELSE $14::bigint END,
          lease_expires_at = CASE WHEN $13::text IS NULL THEN lease_expires_at ELSE $15::bigint END
        WHERE run_id = $1 AND tail = $2 AND ($13::text IS NULL
          OR (lease_owner = $13 AND lease_epoch = $14::bigint)
          OR ((lease_owner IS NULL OR lease_expires_at <= $16::bigint) AND $14::bigint > lease_epoch))
        RETURNING run_no
      ), written AS (
        ${insertEventRecords(s, 11)}
        RETURNING 1
      ) SELECT (SELECT run_no FROM run) AS run_no,
        CASE WHEN $12::boolean THEN set_config('synchronous_commit', 'off', true) END AS relaxed,
        CASE WHEN EXISTS (SELECT 1 FROM run) THEN pg_notify('${channel}',
          CASE WHEN octet_length($1) < 7900 THEN $3 || ' ' || $1 ELSE '*' END) END AS hint`,
    read: `SELECT ${EVENT_COLUMNS} FROM ${s}.skein_events
      WHERE run_no = (SELECT run_no FROM ${s}.skein_runs WHERE run_id = $1) AND seq >= $2
      ORDER BY seq LIMIT $3`,
    run: `SELECT head, tail FROM ${s}.skein_runs WHERE run_id = $1`,
    // The head never passes tail + 1: trimming everything leaves an empty, still-fenced log.
    trim: `WITH moved AS (
        UPDATE ${s}.skein_runs SET head = LEAST($2::bigint, tail + 1)
        WHERE run_id = $1 AND LEAST($2::bigint, tail + 1) > head RETURNING run_no, head
      ), removed AS (
        DELETE FROM ${s}.skein_events e USING moved
        WHERE e.run_no = moved.run_no AND e.seq < moved.head RETURNING 1
      ) SELECT count(*)::integer AS removed FROM removed`,
    listRuns: `SELECT run_id FROM ${s}.skein_runs WHERE tail > 0 ORDER BY run_no`,
    // Not terminal: the statuses `isTerminal` (core/envelope.ts) does not name.
    activeRuns: `SELECT kind, definition_name, definition_version, count(*) AS runs,
        min(run_id) AS sample_run_id
      FROM ${s}.skein_runs
      WHERE status IS NOT NULL AND status NOT IN ('completed', 'failed', 'cancelled')
      GROUP BY kind, definition_name, definition_version`,
    deadlines: `SELECT run_id, next_deadline_at FROM ${s}.skein_runs
      WHERE next_deadline_at IS NOT NULL ORDER BY next_deadline_at`,
    snapshotLatest: `SELECT seq, created_at, format, data FROM ${s}.skein_snapshots
      WHERE run_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT 1`,
    snapshotList: `SELECT seq FROM ${s}.skein_snapshots WHERE run_id = $1 ORDER BY seq`,
    snapshotPrune: `DELETE FROM ${s}.skein_snapshots WHERE run_id = $1 AND seq NOT IN
      (SELECT seq FROM ${s}.skein_snapshots WHERE run_id = $1 ORDER BY seq DESC LIMIT $2)
      RETURNING 1`,
    sync: 'SELECT pg_catalog.txid_current()',
    runLease: `SELECT tail, lease_owner, lease_epoch, lease_expires_at FROM ${s}.skein_runs WHERE run_id = $1`,
    readLease: `SELECT lease_owner, lease_epoch, lease_expires_at FROM ${s}.skein_runs
      WHERE run_id = $1`,
    // $1 run, $2 owner, $3 epoch, $4 expiresAt, $5 now. A run without a row gets one (tail 0,
    // no meta: listed nowhere until its first append). Nothing returned: the claim is refused.
    // The WHERE is `decideClaim` (core/claim-rule.ts) restated, held to its cases by
    // `describeLeaseStore`.
    renewLease: `INSERT INTO ${s}.skein_runs AS r (run_id, lease_owner, lease_epoch, lease_expires_at)
        SELECT $1, $2, $3::bigint, $4::bigint WHERE $3::bigint > 0
      ON CONFLICT (run_id) DO UPDATE SET lease_owner = EXCLUDED.lease_owner,
        lease_epoch = EXCLUDED.lease_epoch, lease_expires_at = EXCLUDED.lease_expires_at
      WHERE (r.lease_owner = $2 AND r.lease_epoch = $3::bigint)
        OR ((r.lease_owner IS NULL OR r.lease_expires_at <= $5::bigint) AND $3::bigint > r.lease_epoch)
      RETURNING lease_epoch`,
    // Released: expired since the epoch of time; owner and epoch stay, so the next take-over
    // still bumps the epoch past every earlier owner's. Committed with synchronous_commit off:
    // a release lost to a crash only leaves the lease to expire by itself (decisions.md, "A
    // lease release and a group's worker tasks cost no fsync of their own").
    releaseLease: `WITH released AS (
        UPDATE ${s}.skein_runs SET lease_expires_at = 0
        WHERE run_id = $1 AND lease_owner = $2 AND lease_epoch = $3::bigint
          AND lease_expires_at > 0 RETURNING 1
      ) SELECT set_config('synchronous_commit', 'off', true) AS relaxed`,
    // $1 owner, $2 now, $3 expiresAt, $4 limit. Rows another host is appending to or claiming
    // are skipped, not waited for; the lease check is repeated on the locked row. "Free" is
    // `claimFree` (core/claim-rule.ts) restated, held to the rule's cases by `describeLeaseStore`.
    // $5..$7: the definition versions to claim (kinds, names, versions), or null for all.
    claimDue: `WITH due AS (
        SELECT run_no FROM ${s}.skein_runs
        WHERE next_deadline_at <= $2::bigint
          AND (lease_owner IS NULL OR lease_expires_at <= $2::bigint)
          AND ($5::text[] IS NULL OR (kind, definition_name, definition_version) IN (
            SELECT * FROM unnest($5::text[], $6::text[], $7::text[])))
        ORDER BY next_deadline_at LIMIT $4 FOR NO KEY UPDATE SKIP LOCKED
      ) UPDATE ${s}.skein_runs r SET lease_owner = $1, lease_epoch = r.lease_epoch + 1,
        lease_expires_at = $3::bigint
      FROM due WHERE r.run_no = due.run_no
      RETURNING r.run_id, r.lease_epoch, r.next_deadline_at`,
    markDue: `UPDATE ${s}.skein_runs SET next_deadline_at = $2::bigint
      WHERE run_id = $1 AND (next_deadline_at IS NULL OR next_deadline_at > $2::bigint)`,
    tails: `SELECT run_id, tail FROM ${s}.skein_runs WHERE run_id = ANY ($1::text[])`,
    deleteRuns: `SELECT * FROM ${s}.skein_delete_runs($1::text[], $2::text[], $3::bigint,
      $4::integer, $5::bigint, $6::text)`,
    // An archived batch: each run only while its tail is the archived one. The rows are locked
    // here (a run appended meanwhile is re-read and left out), then deleted by the function.
    deleteAtTails: `SELECT * FROM ${s}.skein_delete_runs(ARRAY(
        SELECT r.run_id FROM ${s}.skein_runs r
          JOIN unnest($1::text[], $2::bigint[]) AS w(id, tail) ON r.run_id = w.id
        WHERE r.tail = w.tail ORDER BY r.run_no FOR UPDATE OF r),
      $3::text[], NULL, NULL, $4::bigint, $5::text)`,
  }
}

/**
 * The events of one run (its row is the CTE `run`) from a JSON array of `eventRecord`s in
 * parameter `$param`: shared by the single-run append and the trimmed restore.
 */
export function insertEventRecords(s: string, param: number): string {
  return `INSERT INTO ${s}.skein_events (run_no, seq, id, ts, type, thread_id, origin,
        causation_id, effect_id, idempotency_key, event_key, payload)
      SELECT run.run_no, u.s, u.id, u.ts, u.t, u.th, u.o, u.c, u.e, u.ik, u.k, u.p
      FROM run, json_to_recordset($${param}::text::json) AS u(s bigint, id text, ts bigint,
        t text, th text, o text, c text, e text, ik text, k text, p text)`
}
