import type { EventEnvelope } from '../../core/envelope.js'
import type { TrimmedLog } from '../../core/ports.js'
import { checkTrimmedLog, runHeldError, trimmedTail } from '../shared/trimmed-log.js'
import { eventRecord } from './group-commit.js'
import { ATTRIBUTE_COLUMNS } from './schema.js'
import { insertEventRecords } from './statements.js'

/**
 * `restoreTrimmed`'s one statement (one statement is one transaction through any driver's plain
 * `query`): the run's row (head past the snapshot, tail, meta), its events, its snapshot and its
 * attributes. The row is inserted, or a row without events (a lease taken before any append) is
 * taken over; a row with events matches nothing, and nothing else is written (`run_no` null,
 * `held_tail` its tail). Attributes are written as the events' trigger writes them (schema v14);
 * the trigger then applies the restored events' own, in seq order, as at their first append.
 */
export function restoreTrimmedSql(s: string, channel: string): string {
  return `WITH run AS (
      INSERT INTO ${s}.skein_runs (run_id, head, tail, status, kind, definition_name,
        definition_version, created_at, updated_at, next_deadline_at)
      VALUES ($1, $2::bigint, $3::bigint, $4, $5, $6, $7, $8::bigint, $9::bigint, $10::bigint)
      ON CONFLICT (run_id) DO UPDATE SET head = EXCLUDED.head, tail = EXCLUDED.tail,
        status = EXCLUDED.status, kind = EXCLUDED.kind, definition_name = EXCLUDED.definition_name,
        definition_version = EXCLUDED.definition_version, created_at = EXCLUDED.created_at,
        updated_at = EXCLUDED.updated_at, next_deadline_at = EXCLUDED.next_deadline_at
      WHERE ${s}.skein_runs.tail = 0
      RETURNING run_no
    ), written AS (
      ${insertEventRecords(s, 11)}
      RETURNING 1
    ), snapshot AS (
      INSERT INTO ${s}.skein_snapshots (run_id, seq, created_at, format, data)
      SELECT $1, $12::bigint, $13::bigint, $14::integer, $15::text FROM run
      ON CONFLICT (run_id, seq) DO UPDATE SET created_at = EXCLUDED.created_at,
        format = EXCLUDED.format, data = EXCLUDED.data
      RETURNING 1
    ), attributes AS (
      INSERT INTO ${s}.skein_run_attributes (run_no, name, str_value, num_value, is_bool)
      SELECT run.run_no, a.key,
${ATTRIBUTE_COLUMNS}
      FROM run, json_each(coalesce($16::text, '{}')::json) a
      WHERE json_typeof(a.value) IN ('string', 'number', 'boolean')
      RETURNING 1
    ) SELECT (SELECT run_no FROM run) AS run_no,
      (SELECT tail FROM ${s}.skein_runs WHERE run_id = $1) AS held_tail,
      (SELECT count(*) FROM written) + (SELECT count(*) FROM snapshot)
        + (SELECT count(*) FROM attributes) AS rows,
      CASE WHEN EXISTS (SELECT 1 FROM run) THEN pg_notify('${channel}',
        CASE WHEN octet_length($1) < 7900 THEN $3::bigint::text || ' ' || $1 ELSE '*' END) END AS hint`
}

/** The statement's parameters; throws (writing nothing) unless `log` is a trimmed log of the run. */
export function restoreTrimmedParams(runId: string, log: TrimmedLog): unknown[] {
  const head = checkTrimmedLog(runId, log)
  const { events, meta, snapshot } = log
  const records = events.map((e: EventEnvelope) => eventRecord(e))
  return [
    runId,
    head,
    trimmedTail(log),
    meta.status,
    meta.kind,
    meta.definitionName,
    meta.definitionVersion,
    meta.createdAt,
    meta.updatedAt,
    meta.nextDeadlineAt,
    JSON.stringify(records),
    snapshot.seq,
    snapshot.createdAt,
    snapshot.format,
    JSON.stringify(snapshot.data),
    log.attributes ? JSON.stringify(log.attributes) : null,
  ]
}

/** Throws SEQ_CONFLICT when the statement's row says the store holds the run's log already. */
export function checkRestored(runId: string, row: { run_no: unknown; held_tail: unknown }): void {
  if (row.run_no === null) throw runHeldError(runId, Number(row.held_tail ?? 0))
}

/**
 * A run's recorded append keys (`idempotencyKeys`): listed in seq order; restored in one
 * statement, only for a run the store holds events of, each key the run lacks.
 */
export function keyRowsSql(s: string): { list: string; restore: string } {
  return {
    list: `SELECT k.key, k.seq FROM ${s}.skein_idempotency k
      JOIN ${s}.skein_runs r ON r.run_no = k.run_no
      WHERE r.run_id = $1 AND r.tail > 0 ORDER BY k.seq, k.key`,
    restore: `INSERT INTO ${s}.skein_idempotency (run_no, key, seq)
      SELECT r.run_no, k.key, k.seq FROM ${s}.skein_runs r,
        json_to_recordset($2::text::json) AS k(key text, seq bigint)
      WHERE r.run_id = $1 AND r.tail > 0
      ON CONFLICT (run_no, key) DO NOTHING`,
  }
}
