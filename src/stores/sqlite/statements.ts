import type { EventEnvelope } from '../../core/envelope.js'
import { jsonTextOf } from '../../core/json-text.js'
import type { ActiveRunCount, LeaseClaim, RunMeta } from '../../core/ports.js'
import type { EventRow } from '../shared/event-rows.js'
import type { SqliteDatabase, SqliteStatement } from './driver.js'

/** A summary row with its run number (the page cursor). */

/** Named here so declaration emit can spell the statement types. */
export type Statement<P extends unknown[], R = unknown> = SqliteStatement<P, R>

export interface RunRow {
  run_no: number
  head: number
  tail: number
  status: RunMeta['status'] | null
  definition_name: string | null
  next_deadline_at: number | null
  lease_owner: string | null
  lease_epoch: number
  lease_expires_at: number | null
}

export const META_COLUMNS =
  'status, kind, definition_name, definition_version, created_at, updated_at, next_deadline_at'

export interface Statements {
  begin: Statement<[]>
  commit: Statement<[]>
  rollback: Statement<[]>
  savepoint: Statement<[]>
  release: Statement<[]>
  rollbackTo: Statement<[]>
  run: Statement<[string], RunRow>
  /** Changes when another connection commits (SQLite keeps it per connection). */
  dataVersion: Statement<[], number>
  keyExists: Statement<[string, string], number>
  insertKey: Statement<[string, string, number]>
  insertRun: Statement<unknown[]>
  setTail: Statement<[number, number]>
  /** The row's one UPDATE of an append with meta, by `metaSetBits` (`metaParams`). */
  setMeta: Record<number, Statement<unknown[]>>
  /** `setTail` and `setLease` in one statement: `[tail, owner, epoch, expiresAt, runNo]`. */
  setTailLease: Statement<[number, string, number, number, number]>
  /** `insertRun` with the lease: `newRunParams` then `[owner, epoch, expiresAt]`. */
  insertRunLease: Statement<unknown[]>
  /** `[runId, fromSeq, limit]`: at most `limit` events from `fromSeq`. */
  read: Statement<[string, number, number], EventRow>
  /**
   * `[runId, fromSeq]`: every event from `fromSeq`. Its own statement, not `read` with a
   * limit of -1: the same plan, but a bound `LIMIT` costs ~8 µs more a call (decisions.md,
   * "A read of a run's whole tail has no LIMIT parameter").
   */
  readAll: Statement<[string, number], EventRow>
  trimEvents: Statement<[number, number]>
  setHead: Statement<[number, number]>
  listRuns: Statement<[], string>
  deadlines: Statement<[], { runId: string; nextDeadlineAt: number }>
  activeRuns: Statement<[], ActiveRunCount>
  /** `[owner, epoch, expiresAt, run_no]`. */
  setLease: Statement<[string, number, number, number]>
  /** `[runId, owner, epoch]`: lets the lease go if they still hold it. */
  releaseLease: Statement<[string, string, number]>
  /** `[now, now, limit]`: due runs whose lease is free or expired, earliest first. */
  dueUnleased: Statement<
    [number, number, number],
    { run_no: number; run_id: string; next_deadline_at: number; lease_epoch: number }
  >
  /**
   * `[now, now, versions, limit]`: `dueUnleased` of the definition versions in `versions`, a
   * JSON array of `[kind, name, version]`.
   */
  dueUnleasedOf: Statement<
    [number, number, string, number],
    { run_no: number; run_id: string; next_deadline_at: number; lease_epoch: number }
  >
  /** `[at, runId, at]`: the run's next deadline brought forward to `at`. */
  markDue: Statement<[number, string, number]>
}

/** A statement not prepared yet: its SQL and the modes (`pluck`, …) asked for it. */
class Unprepared {
  readonly modes: Array<[string, unknown[]]> = []
  constructor(readonly sql: string) {}
  pluck(...args: unknown[]) {
    this.modes.push(['pluck', args])
    return this
  }
  raw(...args: unknown[]) {
    this.modes.push(['raw', args])
    return this
  }
  expand(...args: unknown[]) {
    this.modes.push(['expand', args])
    return this
  }
}

/**
 * The statements `build` makes, each prepared at its first use instead of at once: a
 * connection that runs few of them (an actor host's cell: opened for one read, then closed)
 * does not prepare the thirty-odd it never runs. A prepared statement replaces its getter, so
 * later uses read a plain property.
 */
export function lazyStatements<T extends object>(
  db: SqliteDatabase,
  build: (db: SqliteDatabase) => T,
): T {
  const deferred = { prepare: (sql: string) => new Unprepared(sql) } as unknown as SqliteDatabase
  const defer = (target: Record<string, unknown>) => {
    for (const [key, value] of Object.entries(target)) {
      if (value instanceof Unprepared) {
        Object.defineProperty(target, key, {
          configurable: true,
          enumerable: true,
          get() {
            let statement: any = db.prepare(value.sql)
            for (const [mode, args] of value.modes) statement = statement[mode](...args)
            Object.defineProperty(target, key, { value: statement, enumerable: true })
            return statement
          },
        })
      } else if (value !== null && typeof value === 'object' && value.constructor === Object) {
        defer(value as Record<string, unknown>)
      }
    }
  }
  const built = build(deferred)
  defer(built as Record<string, unknown>)
  return built
}

/** Every statement the store runs, prepared once per connection at its first use. */
export function prepareStatements(connection: SqliteDatabase): Statements {
  return lazyStatements(connection, (db) => ({
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    savepoint: db.prepare('SAVEPOINT skein_append'),
    release: db.prepare('RELEASE skein_append'),
    rollbackTo: db.prepare('ROLLBACK TO skein_append'),
    run: db.prepare<[string], RunRow>(
      `SELECT run_no, head, tail, status, definition_name, next_deadline_at, lease_owner,
        lease_epoch, lease_expires_at FROM skein_runs WHERE run_id = ?`,
    ),
    dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
    keyExists: db
      .prepare<[string, string], number>(
        'SELECT 1 FROM skein_idempotency WHERE run_id = ? AND key = ?',
      )
      .pluck(),
    insertKey: db.prepare<[string, string, number]>(
      'INSERT INTO skein_idempotency (run_id, key, seq) VALUES (?, ?, ?)',
    ),
    // A new run's row is inserted before its first events, which carry its run_no.
    insertRun: db.prepare<unknown[]>(
      `INSERT INTO skein_runs (run_id, tail, ${META_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    setTail: db.prepare<[number, number]>('UPDATE skein_runs SET tail = ? WHERE run_no = ?'),
    // An append that carries a lease writes it with the row's other columns: one statement,
    // not two, on every commit of an owning engine (ownership is on by default).
    setTailLease: db.prepare<[number, string, number, number, number]>(
      `UPDATE skein_runs SET tail = ?, lease_owner = ?, lease_epoch = ?, lease_expires_at = ?
        WHERE run_no = ?`,
    ),
    insertRunLease: db.prepare<unknown[]>(
      `INSERT INTO skein_runs (run_id, tail, ${META_COLUMNS}, lease_owner, lease_epoch,
        lease_expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // One statement per variant, so the row is updated once per append whatever changed.
    setMeta: Object.fromEntries(
      Array.from({ length: 16 }, (_, bits) => bits).map((bits) => [
        bits,
        db.prepare<unknown[]>(setMetaSql(bits)),
      ]),
    ),
    read: db.prepare<[string, number, number], EventRow>(`${READ_EVENTS} LIMIT ?`),
    readAll: db.prepare<[string, number], EventRow>(READ_EVENTS),
    trimEvents: db.prepare<[number, number]>(
      'DELETE FROM skein_events WHERE run_no = ? AND seq < ?',
    ),
    setHead: db.prepare<[number, number]>('UPDATE skein_runs SET head = ? WHERE run_no = ?'),
    listRuns: db
      .prepare<[], string>('SELECT run_id FROM skein_runs WHERE tail > 0 ORDER BY run_no')
      .pluck(),
    // Not terminal: the statuses `isTerminal` (core/envelope.ts) does not name.
    activeRuns: db.prepare<[], ActiveRunCount>(
      `SELECT kind, definition_name AS definitionName, definition_version AS definitionVersion,
              count(*) AS runs, min(run_id) AS sampleRunId FROM skein_runs
        WHERE status IS NOT NULL AND status NOT IN ('completed', 'failed', 'cancelled')
        GROUP BY kind, definition_name, definition_version`,
    ),
    deadlines: db.prepare<[], { runId: string; nextDeadlineAt: number }>(
      `SELECT run_id AS runId, next_deadline_at AS nextDeadlineAt FROM skein_runs
        WHERE next_deadline_at IS NOT NULL ORDER BY next_deadline_at`,
    ),
    setLease: db.prepare<[string, number, number, number]>(
      `UPDATE skein_runs SET lease_owner = ?, lease_epoch = ?, lease_expires_at = ?
        WHERE run_no = ?`,
    ),
    releaseLease: db.prepare<[string, string, number]>(
      `UPDATE skein_runs SET lease_expires_at = 0
        WHERE run_id = ? AND lease_owner = ? AND lease_epoch = ?`,
    ),
    // "Free" is `claimFree` (core/claim-rule.ts) restated, held to the rule's cases by
    // `describeLeaseStore`; every other lease check of this store calls `decideClaim` itself.
    dueUnleased: db.prepare(
      `SELECT run_no, run_id, next_deadline_at, lease_epoch FROM skein_runs
        WHERE next_deadline_at <= ? AND (lease_owner IS NULL OR lease_expires_at <= ?)
        ORDER BY next_deadline_at LIMIT ?`,
    ),
    dueUnleasedOf: db.prepare(
      `SELECT run_no, run_id, next_deadline_at, lease_epoch FROM skein_runs
        WHERE next_deadline_at <= ? AND (lease_owner IS NULL OR lease_expires_at <= ?)
          AND EXISTS (SELECT 1 FROM json_each(?) AS v
            WHERE json_extract(v.value, '$[0]') = kind
              AND json_extract(v.value, '$[1]') = definition_name
              AND json_extract(v.value, '$[2]') = definition_version)
        ORDER BY next_deadline_at LIMIT ?`,
    ),
    markDue: db.prepare(
      `UPDATE skein_runs SET next_deadline_at = ?
        WHERE run_id = ? AND (next_deadline_at IS NULL OR next_deadline_at > ?)`,
    ),
  }))
}

/** A run's events from a seq, in order: `read` adds its `LIMIT`, `readAll` has none. */
const READ_EVENTS = `SELECT seq, id, ts, type, thread_id, origin, causation_id, effect_id,
  idempotency_key, event_key, payload FROM skein_events
  WHERE run_no = (SELECT run_no FROM skein_runs WHERE run_id = ?) AND seq >= ? ORDER BY seq`
const EVENT_COLUMNS = `run_no, seq, id, ts, type, thread_id, origin, causation_id, effect_id,
  idempotency_key, event_key, payload`
const EVENT_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'
/** Parameters per event row (`pushEventParams`). */
export const EVENT_PARAMS = 12
/** Rows per multi-row event `INSERT`: a group's events are written in statements this size. */
export const EVENT_ROWS_PER_INSERT = 16

/**
 * The multi-row event `INSERT` for `rows` rows (1 to EVENT_ROWS_PER_INSERT), each prepared at
 * its first use and kept. One statement call per 16 events instead of one per event: a call's
 * fixed cost (binding, stepping, resetting, its result object) is most of an insert's CPU in
 * JavaScript (decisions.md, "SQLite appends insert a group's events 16 rows per statement").
 */
export function eventInserts(db: SqliteDatabase): (rows: number) => Statement<unknown[]> {
  const prepared: Array<Statement<unknown[]>> = []
  return (rows) =>
    (prepared[rows] ??= db.prepare<unknown[]>(
      `INSERT INTO skein_events (${EVENT_COLUMNS}) VALUES ${Array(rows).fill(EVENT_ROW).join(', ')}`,
    ))
}

/**
 * Pushes the event's row parameters (in `eventInserts`' column order, kept beside the SQL so
 * the order cannot drift) onto `params`; returns its payload's JSON text.
 */
export function pushEventParams(params: unknown[], runNo: number, e: EventEnvelope): string {
  const payload = jsonTextOf(e.payload)
  params.push(
    runNo,
    e.seq,
    e.id,
    e.ts,
    e.type,
    e.threadId,
    e.origin,
    e.causationId ?? null,
    e.effectId ?? null,
    e.idempotencyKey ?? null,
    e.key ?? null,
    payload,
  )
  return payload
}

/** One event's row parameters as an array (a raw one-row insert's, in tests and benchmarks). */
export function eventParams(runNo: number, e: EventEnvelope): unknown[] {
  const params: unknown[] = []
  pushEventParams(params, runNo, e)
  return params
}

const metaValues = (m: RunMeta): unknown[] => [
  m.kind,
  m.definitionName,
  m.definitionVersion,
  m.createdAt,
  m.updatedAt,
]

/**
 * Bits of a `setMeta` variant: it also writes the lease (1), the status (2), the deadline (4),
 * the definition's name (8).
 */
export const metaSetBits = (
  lease: boolean,
  status: boolean,
  deadline: boolean,
  definition: boolean,
): number => (lease ? 1 : 0) | (status ? 2 : 0) | (deadline ? 4 : 0) | (definition ? 8 : 0)

/**
 * The `setMeta` variant's SQL. The status, the deadline and the definition's name are named
 * only when they change: naming an indexed column in SET rewrites its index entry (one more
 * page in the commit's WAL write, and an index delete and insert per run), although most
 * appends change none of them. Every variant is one statement, so an append that also moves
 * the status or the deadline updates its row once, not two or three times.
 */
function setMetaSql(bits: number): string {
  return `UPDATE skein_runs SET tail = ?, kind = ?${bits & 8 ? ', definition_name = ?' : ''},
    definition_version = ?, created_at = ?, updated_at = ?${bits & 1 ? ', lease_owner = ?, lease_epoch = ?, lease_expires_at = ?' : ''}${
      bits & 2 ? ', status = ?' : ''
    }${bits & 4 ? ', next_deadline_at = ?' : ''} WHERE run_no = ?`
}

/** Positional parameters of the `setMeta` variant `bits` (kept beside its SQL). */
export function metaParams(
  runNo: number,
  tail: number,
  m: RunMeta,
  lease: LeaseClaim | undefined,
  bits: number,
): unknown[] {
  const params: unknown[] = [tail, m.kind]
  if (bits & 8) params.push(m.definitionName)
  params.push(m.definitionVersion, m.createdAt, m.updatedAt)
  if (bits & 1) params.push(lease!.owner, lease!.epoch, lease!.expiresAt)
  if (bits & 2) params.push(m.status)
  if (bits & 4) params.push(m.nextDeadlineAt)
  params.push(runNo)
  return params
}

/** Positional parameters of `insertRun`; a run appended without meta has none yet. */
export function newRunParams(runId: string, tail: number, m: RunMeta | undefined): unknown[] {
  return m
    ? [runId, tail, m.status, ...metaValues(m), m.nextDeadlineAt]
    : [runId, tail, null, null, null, null, null, null, null]
}
