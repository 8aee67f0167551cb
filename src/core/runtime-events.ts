import type { ErrorInfo } from './errors.js'
import type { Json } from './json.js'

/** The runtime's own event types (DESIGN §2, Contract). */
export const RT = {
  runStarted: 'runtime.run.started',
  runCompleted: 'runtime.run.completed',
  runFailed: 'runtime.run.failed',
  runCancelled: 'runtime.run.cancelled',
  threadStarted: 'runtime.thread.started',
  threadCompleted: 'runtime.thread.completed',
  threadFailed: 'runtime.thread.failed',
  threadCancelled: 'runtime.thread.cancelled',
  waitRegistered: 'runtime.wait.registered',
  waitSatisfied: 'runtime.wait.satisfied',
  timerSet: 'runtime.timer.set',
  timerFired: 'runtime.timer.fired',
  effectRequested: 'runtime.effect.requested',
  effectAttemptStarted: 'runtime.effect.attempt.started',
  effectCompleted: 'runtime.effect.completed',
  effectFailed: 'runtime.effect.failed',
  effectRetryScheduled: 'runtime.effect.retry.scheduled',
  effectDispatched: 'runtime.effect.dispatched',
  effectHeartbeat: 'runtime.effect.heartbeat',
  effectTimedOut: 'runtime.effect.timed_out',
  effectAmbiguous: 'runtime.effect.ambiguous',
  effectCancelled: 'runtime.effect.cancelled',
  effectCancelRequested: 'runtime.effect.cancel.requested',
  cancelRequested: 'runtime.cancel.requested',
  signalReceived: 'runtime.signal.received',
} as const

export const RUNTIME_PREFIX = 'runtime.'

export interface RunStartedPayload {
  kind: string
  definitionName: string
  definitionVersion: string
  input: Json
  rootThreadId: string
  /**
   * The log protocol version the run is recorded with (fold-protocol.ts); absent in logs
   * written before it existed, which are version 1.
   */
  protocolVersion?: number
  /**
   * Fingerprint of the definition's shape at start (absent for definitions that declare none,
   * and in logs written before fingerprints existed). See `Definition.shape`.
   */
  definitionFingerprint?: string
}

export interface ThreadStartedPayload {
  threadId: string
  parentThreadId: string | null
  kind: string
  definitionName: string
  definitionVersion: string
  input: Json
  /** The parent's command key that spawned this thread (absent for the root). */
  key?: string
  /** Fingerprint of the thread's definition's shape when it started (as in run.started). */
  definitionFingerprint?: string
}

/** What a wait is waiting on, as recorded in `runtime.wait.registered`. */
export type WaitOn =
  | { event: { type: string; match?: Json; threadId?: string; expect?: Json }; timeoutAt?: number }
  | { timer: { at: number } }

export interface WaitRegisteredPayload {
  waitId: string
  threadId: string
  key: string
  on: WaitOn
}

export interface WaitSatisfiedPayload {
  waitId: string
  threadId: string
  event: { seq: number; type: string }
  /** The matched event's payload (timer waits: `{ at }`). */
  value: Json
  timedOut?: boolean
}

export interface EffectRequestedPayload {
  effectId: string
  threadId: string
  type: string
  input: Json
  key: string
  execution: EffectExecution
  retry?: Json
  timeoutMs?: number
}

export type EffectExecution = 'local' | 'inline' | 'worker'

export interface EffectFailedPayload {
  effectId: string
  attempt: number
  error: ErrorInfo
  final: boolean
  reason?: 'error' | 'interrupted' | 'timeout' | 'terminal'
}

/**
 * Recorded before the events of a signal sent with an idempotency key: the key and a digest of
 * the signal's events (canonical JSON), so a later request with the same key and another body
 * is refused (`IDEMPOTENCY_CONFLICT`), after snapshots, trims and restarts too.
 */
export interface SignalReceivedPayload {
  idempotencyKey: string
  digest: string
  events: number
}
