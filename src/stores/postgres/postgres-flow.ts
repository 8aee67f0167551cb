import type { Json } from '../../core/json.js'
import type { AdmitResult, FlowKeyState, FlowStore } from '../../core/ports.js'
import { FLOW_LOCK_SEED } from './flow-controls-migration.js'

type Read = (action: string, text: string, params: unknown[]) => Promise<any[]>

const FINISHED = `('completed', 'failed', 'cancelled')`

/**
 * Migration 10 (flow control; docs/flow-control.md): one row per run that waits for admission or
 * holds a slot, in queueing order (seq), and `skein_flow_admit`, one admission round of a key
 * in one call. It takes a transaction lock on the key (`pg_advisory_xact_lock`): the rounds of
 * one key on every host run one after another, each counting what the previous committed, so
 * the count is exact; other keys are not held up. The waiting rows it admits are taken
 * `FOR UPDATE SKIP LOCKED`. A slot is an admitted row whose run (`skein_runs.status`) has not
 * finished, or whose log does not exist yet while its hold lasts: the commit that ends a run
 * frees its slot. A round commits with `synchronous_commit` off: what it admits is started by
 * an append whose durable commit flushes the WAL past it, and a round lost with the server is
 * made again.
 */
export function flowMigration(s: string): string {
  return `
  CREATE TABLE ${s}.skein_flow (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    run_id text PRIMARY KEY,
    queue text NOT NULL,
    flow_key text NOT NULL,
    priority double precision NOT NULL,
    start_at bigint NOT NULL,
    enqueued_at bigint NOT NULL,
    admitted_at bigint,
    hold_until bigint NOT NULL DEFAULT 0
  );
  CREATE INDEX skein_flow_key ON ${s}.skein_flow (queue, flow_key, admitted_at);
  CREATE INDEX skein_flow_waiting ON ${s}.skein_flow (start_at) WHERE admitted_at IS NULL;
  CREATE FUNCTION ${s}.skein_flow_admit(p_queue text, p_key text, p_limit integer,
      p_now bigint, p_hold bigint, e_run text, e_priority double precision, e_start bigint,
      e_enqueued bigint)
  RETURNS SETOF text
  LANGUAGE plpgsql AS $skein_flow_admit$
  DECLARE
    free integer;
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM pg_advisory_xact_lock(hashtextextended(p_queue || chr(10) || p_key, ${FLOW_LOCK_SEED}));
    IF e_run IS NOT NULL THEN
      INSERT INTO ${s}.skein_flow (run_id, queue, flow_key, priority, start_at, enqueued_at)
        VALUES (e_run, p_queue, p_key, e_priority, e_start, e_enqueued)
        ON CONFLICT (run_id) DO NOTHING;
    END IF;
    DELETE FROM ${s}.skein_flow f USING ${s}.skein_flow g
      LEFT JOIN ${s}.skein_runs r ON r.run_id = g.run_id
      WHERE f.run_id = g.run_id AND g.queue = p_queue AND g.flow_key = p_key
        AND (r.status IN ${FINISHED}
          OR (r.status IS NULL AND g.admitted_at IS NOT NULL AND g.hold_until <= p_now));
    SELECT p_limit - count(*) INTO free FROM ${s}.skein_flow
      WHERE queue = p_queue AND flow_key = p_key AND admitted_at IS NOT NULL;
    IF free <= 0 THEN
      RETURN;
    END IF;
    RETURN QUERY
      WITH chosen AS (
        SELECT f.run_id, f.priority, f.seq FROM ${s}.skein_flow f
          LEFT JOIN ${s}.skein_runs r ON r.run_id = f.run_id
          WHERE f.queue = p_queue AND f.flow_key = p_key AND f.admitted_at IS NULL
            AND f.start_at <= p_now AND (r.status = 'queued' OR f.run_id = e_run)
          ORDER BY f.priority DESC, f.seq LIMIT free
          FOR UPDATE OF f SKIP LOCKED
      ), marked AS (
        UPDATE ${s}.skein_flow f SET admitted_at = p_now, hold_until = p_hold
          FROM chosen WHERE f.run_id = chosen.run_id
          RETURNING f.run_id, chosen.priority, chosen.seq
      )
      SELECT marked.run_id FROM marked ORDER BY marked.priority DESC, marked.seq;
  END
  $skein_flow_admit$;
  `
}

/**
 * Flow control's queues in a Postgres schema (migrations 10, 13, 16 and 18; see
 * `flowMigration`, `flowControlsMigration`, `flowAdmitAllMigration` and `flowTakeMigration`).
 */
export function postgresFlow(s: string, read: Read): FlowStore {
  const sql = {
    admit: `SELECT run_id, existing, retry_at
      FROM ${s}.skein_flow_admit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    // The gathered starts in one round (migration 16: `flowAdmitAllMigration`).
    admitAll: `SELECT run_id, existing, retry_at
      FROM ${s}.skein_flow_admit_all($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    debounce: `SELECT run_id, opened, ends_at
      FROM ${s}.skein_flow_debounce_start($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    admission: `SELECT f.admitted_at, d.input FROM ${s}.skein_flow f
      LEFT JOIN ${s}.skein_flow_debounce d ON d.run_id = f.run_id WHERE f.run_id = $1`,
    anyWaiting: `SELECT 1 FROM ${s}.skein_flow f JOIN ${s}.skein_runs r ON r.run_id = f.run_id
      WHERE f.queue = $1 AND f.flow_key = $2 AND f.admitted_at IS NULL AND f.start_at <= $3
        AND r.status = 'queued' LIMIT 1`,
    pendingKeys: `SELECT DISTINCT f.queue COLLATE "C" AS queue, f.flow_key COLLATE "C" AS flow_key
      FROM ${s}.skein_flow f JOIN ${s}.skein_runs r ON r.run_id = f.run_id
      WHERE f.admitted_at IS NULL AND f.start_at <= $1 AND r.status = 'queued'
        AND (f.queue COLLATE "C", f.flow_key COLLATE "C") > ($3::text COLLATE "C", $4::text COLLATE "C")
      ORDER BY 1, 2 LIMIT $2`,
    orphans: `SELECT d.run_id, d.queue, d.input FROM ${s}.skein_flow_debounce d
      JOIN ${s}.skein_flow f ON f.run_id = d.run_id LEFT JOIN ${s}.skein_runs r ON r.run_id = d.run_id
      WHERE f.admitted_at IS NULL AND r.status IS NULL AND f.enqueued_at <= $1
      ORDER BY f.seq LIMIT $2`,
    abandoned: `WITH gone AS (DELETE FROM ${s}.skein_flow f WHERE f.enqueued_at <= $1
        AND NOT EXISTS (SELECT 1 FROM ${s}.skein_runs r WHERE r.run_id = f.run_id)
        AND NOT EXISTS (SELECT 1 FROM ${s}.skein_flow_debounce d WHERE d.run_id = f.run_id)
        RETURNING 1) SELECT count(*)::int AS n FROM gone`,
    stalled: `SELECT f.run_id FROM ${s}.skein_flow f JOIN ${s}.skein_runs r ON r.run_id = f.run_id
      WHERE f.admitted_at IS NOT NULL AND f.admitted_at < $1 AND r.status = 'queued'`,
    keys: `SELECT f.queue, f.flow_key,
        count(*) FILTER (WHERE f.admitted_at IS NOT NULL) AS active,
        count(*) FILTER (WHERE f.admitted_at IS NULL AND r.status = 'queued') AS queued,
        min(f.enqueued_at) FILTER (WHERE f.admitted_at IS NULL AND r.status = 'queued') AS oldest,
        (SELECT count(*) FROM ${s}.skein_flow_rate w WHERE w.queue = f.queue
          AND w.flow_key = f.flow_key AND w.admitted_at > $1) AS recent
      FROM ${s}.skein_flow f LEFT JOIN ${s}.skein_runs r ON r.run_id = f.run_id
      WHERE r.status IS NULL OR r.status NOT IN ${FINISHED}
      GROUP BY f.queue, f.flow_key ORDER BY f.queue COLLATE "C", f.flow_key COLLATE "C"`,
  }
  return {
    // A new run's first append takes its slot (migration 18, `flowTakeMigration`).
    admitsInAppend: true,
    async admit({ queue, key, limit, now, holdUntil, enqueue: e, enqueueAll, rate, skipIfLive }) {
      if (enqueueAll !== undefined) {
        const rows = await read(`admit ${queue} ${key}`, sql.admitAll, [
          ...[queue, key, limit, now, holdUntil],
          enqueueAll.map((x) => x.runId),
          enqueueAll.map((x) => x.priority),
          enqueueAll.map((x) => x.startAt),
          enqueueAll.map((x) => x.enqueuedAt),
          rate?.limit ?? null,
          rate?.periodMs ?? null,
        ])
        return resultOf(rows)
      }
      // A round with nothing to queue and no run waiting admits nothing: answered from a read,
      // without the key's lock or a write (the next round of the key forgets finished entries).
      if (e === undefined) {
        const waiting = await read(`read waiting ${queue} ${key}`, sql.anyWaiting, [
          queue,
          key,
          now,
        ])
        if (waiting.length === 0) return { admitted: [] }
      }
      const rows = await read(`admit ${queue} ${key}`, sql.admit, [
        queue,
        key,
        limit,
        now,
        holdUntil,
        e?.runId ?? null,
        e?.priority ?? 0,
        e?.startAt ?? 0,
        e?.enqueuedAt ?? 0,
        rate?.limit ?? null,
        rate?.periodMs ?? null,
        skipIfLive === true,
      ])
      return resultOf(rows)
    },
    async debounce({ entry, key, input, periodMs, maxWaitMs, abandonedBefore }) {
      const [row] = await read(`debounce ${entry.queue} ${key}`, sql.debounce, [
        entry.queue,
        key,
        entry.runId,
        entry.key,
        entry.priority,
        entry.enqueuedAt,
        JSON.stringify(input),
        periodMs,
        maxWaitMs ?? null,
        abandonedBefore,
      ])
      return { runId: row.run_id, opened: row.opened, endsAt: Number(row.ends_at) }
    },
    async admission(runId) {
      const [row] = await read(`read admission of ${runId}`, sql.admission, [runId])
      if (row === undefined || row.admitted_at === null) return null
      const at = Number(row.admitted_at)
      return row.input === null ? { at } : { at, input: JSON.parse(row.input) as Json }
    },
    async orphanedWindows(before, limit) {
      const rows = await read('read orphaned debounce windows', sql.orphans, [before, limit])
      return rows.map((r) => ({
        runId: r.run_id as string,
        queue: r.queue as string,
        input: JSON.parse(r.input) as Json,
      }))
    },
    async forgetAbandoned(before) {
      const [row] = await read('forget abandoned queue entries', sql.abandoned, [before])
      return row.n as number
    },
    async pending(now, stalledBefore, limit, after) {
      const params = [now, limit, after?.queue ?? '', after?.key ?? '']
      const keys = await read('read pending admissions', sql.pendingKeys, params)
      const stalled = await read('read stalled admissions', sql.stalled, [stalledBefore])
      return {
        keys: keys.map((r) => ({ queue: r.queue as string, key: r.flow_key as string })),
        stalled: stalled.map((r) => r.run_id as string),
      }
    },
    async keys(since) {
      return (await read('read flow keys', sql.keys, [since])).map(
        (r): FlowKeyState => ({
          queue: r.queue,
          key: r.flow_key,
          active: Number(r.active),
          queued: Number(r.queued),
          recentAdmissions: Number(r.recent),
          oldestQueuedAt: r.oldest === null ? null : Number(r.oldest),
        }),
      )
    },
  }
}

/** A round's rows as its answer: admitted runs, the live run a skip found, the next window. */
function resultOf(rows: any[]): AdmitResult {
  const result: AdmitResult = { admitted: [] }
  for (const row of rows) {
    if (row.run_id !== null) result.admitted.push(row.run_id)
    else if (row.existing !== null) result.existing = row.existing
    else if (row.retry_at !== null) result.retryAt = Number(row.retry_at)
  }
  return result
}
