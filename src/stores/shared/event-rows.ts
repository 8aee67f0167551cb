import type { EventEnvelope, EventOrigin } from '../../core/envelope.js'

/**
 * An event row as the SQL stores read it (the run id lives in the runs table). Integer
 * columns arrive as numbers from SQLite and as strings from Postgres (`bigint` may exceed
 * 2^53; a seq or a millisecond time never does).
 */
export interface EventRow {
  seq: number | string
  id: string
  ts: number | string
  type: string
  thread_id: string | null
  origin: string
  causation_id: string | null
  effect_id: string | null
  idempotency_key: string | null
  event_key: string | null
  payload: string
}

/** Absent optional fields stay absent (not `undefined`), so envelopes compare equal. */
export function rowToEnvelope(runId: string, row: EventRow): EventEnvelope {
  const e: EventEnvelope = {
    id: row.id,
    runId,
    seq: Number(row.seq),
    ts: Number(row.ts),
    type: row.type,
    payload: JSON.parse(row.payload),
    threadId: row.thread_id,
    origin: row.origin as EventOrigin,
  }
  if (row.causation_id !== null) e.causationId = row.causation_id
  if (row.effect_id !== null) e.effectId = row.effect_id
  if (row.idempotency_key !== null) e.idempotencyKey = row.idempotency_key
  if (row.event_key !== null) e.key = row.event_key
  return e
}
