import type { ErrorInfo } from '../errors.js'
import type { Json } from '../json.js'
import type {
  EffectExecution,
  EffectRequestedPayload,
  WorkerDeadlineKind,
  WorkerTimeouts,
} from '../runtime-events.js'

export type EffectStatus =
  | 'requested'
  | 'started'
  | 'retry_scheduled'
  | 'queued'
  | 'dispatched'
  | 'completed'
  | 'failed'
  | 'ambiguous'
  | 'timed_out'
  | 'cancelled'

/** An effect the fold still tracks (effects.ts folds the `runtime.effect.*` events into it). */
export interface EffectRecord {
  effectId: string
  threadId: string
  key: string
  type: string
  input: Json
  execution: EffectExecution
  retry?: Json
  timeoutMs?: number
  status: EffectStatus
  /** The current (or next, when a retry is scheduled) attempt number; 0 before the first. */
  attempt: number
  nextAttemptAt?: number
  deadlineAt?: number
  result?: Json
  lastError?: ErrorInfo
  cancelRequested?: boolean
  /** Worker effects: which timeout `deadlineAt` enforces. */
  deadlineKind?: WorkerDeadlineKind
  /** Worker effects: the start-to-close deadline of the current attempt, once started. */
  closeAt?: number
  /** Worker effects: the timeouts recorded at dispatch (the log, not the code, decides). */
  timeouts?: WorkerTimeouts
}

/** The record of an effect just requested (before its first attempt). */
export function requestedEffect(r: EffectRequestedPayload): EffectRecord {
  const record: EffectRecord = {
    effectId: r.effectId,
    threadId: r.threadId,
    key: r.key,
    type: r.type,
    input: r.input,
    execution: r.execution,
    status: 'requested',
    attempt: 0,
  }
  if (r.retry !== undefined) record.retry = r.retry
  if (r.timeoutMs !== undefined) record.timeoutMs = r.timeoutMs
  return record
}
