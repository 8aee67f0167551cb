import type { RunAttributes, RunAttributeValue } from './attributes.js'
import type { EventEnvelope } from './envelope.js'
import type { ErrorInfo } from './errors.js'
import type { Json } from './json.js'
import type { WorkerCallbackInput } from './ports.js'

// The catalog of the runtime's own events (docs/http.md, "Event types"; public surface: the names and the listed
// fields; more fields may be added): every `runtime.*` type with its payload. The runtime
// writes them through `Batch.add`, whose payload parameter is typed by this catalog, and the
// fold and queries read them as `RuntimeEvent`s, so a field written and a field read are the
// same field.

export interface RunStartedPayload {
  kind: string
  definitionName: string
  definitionVersion: string
  input: Json
  rootThreadId: string
  /**
   * The log protocol version the run is recorded with (fold/protocol.ts); absent in logs
   * written before it existed, which are version 1.
   */
  protocolVersion?: number
  /**
   * Fingerprint of the definition's shape at start (absent for definitions that declare none,
   * and in logs written before fingerprints existed). See `Definition.shape`.
   */
  definitionFingerprint?: string
  /**
   * The run's deadline (docs/workflows.md, "Run deadline"): the `timeoutMs` it started with and
   * the time it ends at, failed with RUN_TIMED_OUT, unless it finished first.
   */
  timeoutMs?: number
  deadlineAt?: number
  /** The attributes the start set (docs/operating-runs.md, "Attributes"); absent: none. */
  attributes?: RunAttributes
  /**
   * A fork's source (docs/operating-runs.md, "Fork"): the run it copied, and the first seq it
   * did not copy. Absent for a run that is not a fork.
   */
  forkedFrom?: { runId: string; atSeq: number }
}

/**
 * The run changed its attributes (an `attributes` command): each name to its new value, null
 * to remove it. Stores index them from this event and the start's.
 */
export interface RunAttributesPayload {
  attributes: Record<string, RunAttributeValue | null>
}

/**
 * A run its definition's flow control did not admit at once (docs/flow-control.md): it waits
 * in `queue`, under `key`, until a slot is free and `startAt` has come. Its root thread starts
 * with `runtime.run.admitted`.
 */
export interface RunQueuedPayload {
  queue: string
  key: string
  priority: number
  startAt: number
  /**
   * What holds it: 'concurrency' (every slot of its key taken), 'rate' (its key's rate window
   * is full), 'debounce' (its window is open) or 'startAt' (not yet due).
   */
  reason: string
  /** The key's concurrency limit when it was queued. */
  limit: number
}

/** The run was admitted (at once, or after waiting queued since its start): its root thread starts. */
export interface RunAdmittedPayload {
  queue: string
  key: string
  /** How long it waited (ms; 0 when admitted at once). */
  waitedMs: number
  /** When the store admitted it (engine clock ms; a rate window counts this time). */
  admittedAt?: number
  /** A debounced run's input: the last start's of its window (its root thread's input). */
  input?: Json
}

export interface RunCompletedPayload {
  output: Json
}

export interface RunFailedPayload {
  error: ErrorInfo
}

export interface RunCancelledPayload {
  reason?: string
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

export interface ThreadCompletedPayload {
  threadId: string
  output: Json
}

export interface ThreadFailedPayload {
  threadId: string
  error: ErrorInfo
}

export interface ThreadCancelledPayload {
  threadId: string
  reason?: string
}

/** What a wait is waiting on, as recorded in `runtime.wait.registered`. */
export type WaitOn =
  | { event: { type: string; match?: Json; threadId?: string; expect?: Json }; timeoutAt?: number }
  | { timer: { at: number } }
  | { url: { input?: string }; timeoutAt?: number }

export interface WaitRegisteredPayload {
  waitId: string
  threadId: string
  key: string
  on: WaitOn
}

/**
 * A wait URL completed its wait (the `runtime.wait.satisfied` that follows carries the posted
 * JSON). Names the token by its id: the token itself is never recorded.
 */
export interface WaitUrlCompletedPayload {
  waitId: string
  threadId: string
  tokenId: string
}

export interface WaitSatisfiedPayload {
  waitId: string
  threadId: string
  event: { seq: number; type: string }
  /** The matched event's payload (timer waits: `{ at }`). */
  value: Json
  timedOut?: boolean
}

export interface TimerSetPayload {
  timerId: string
  waitId: string
  at: number
}

export interface TimerFiredPayload {
  timerId: string
  waitId: string
}

export type EffectExecution = 'local' | 'inline' | 'worker'

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

/** Which timeout a worker effect's current deadline enforces. */
export type WorkerDeadlineKind =
  | 'schedule_to_start'
  | 'start_to_close'
  | 'heartbeat'
  | 'cancellation'

/** The timeouts recorded at dispatch, which later callbacks apply (the log decides them). */
export interface WorkerTimeouts {
  startToCloseMs?: number
  heartbeatMs?: number
  cancellationTimeoutMs?: number
}

/**
 * The deadline fields of worker lifecycle events (`dispatched`, a worker's `attempt.started`,
 * `heartbeat`): the deadline, which timeout it enforces, and start-to-close once started.
 */
export interface WorkerDeadline {
  /** `null`: no deadline until the next event says otherwise. */
  deadlineAt?: number | null
  timeout?: WorkerDeadlineKind
  closeAt?: number
}

export interface EffectAttemptStartedPayload extends WorkerDeadline {
  effectId: string
  attempt: number
}

export interface EffectCompletedPayload {
  effectId: string
  attempt: number
  result: Json
}

export interface EffectFailedPayload {
  effectId: string
  attempt: number
  error: ErrorInfo
  final: boolean
  reason?: 'error' | 'interrupted' | 'timeout' | 'terminal'
}

export interface EffectRetryScheduledPayload {
  effectId: string
  attempt: number
  nextAttemptAt: number
  reason: 'backoff' | 'interrupted' | 'operator'
  /** Operator retries: the effect's command key. */
  key?: string
  /** Operator retries: the caller's identity, or null. */
  by?: Json
}

/**
 * An attempt that waits for its effect's flow control (docs/flow-control.md, "Effects"):
 * every slot of its key is taken (`concurrency`) or its rate is spent (`rate`). It starts when
 * one frees, as attempt `attempt`: waiting uses up no retry.
 */
export interface EffectQueuedPayload {
  effectId: string
  /** The attempt that will start once admitted. */
  attempt: number
  /** `effect:<type>`. */
  queue: string
  /** The key its `concurrency` (or, waiting for its rate, its `rate`) key function gave. */
  key: string
  reason: 'concurrency' | 'rate'
  /** The limit that holds it. */
  limit: number
}

export interface EffectDispatchedPayload extends WorkerDeadline {
  effectId: string
  attempt: number
  deadlineAt: number | null
  timeouts?: WorkerTimeouts
}

export interface EffectHeartbeatPayload extends WorkerDeadline {
  effectId: string
  attempt: number
}

export interface EffectTimedOutPayload {
  effectId: string
  attempt: number
  /** Worker effects: the timeout that passed. */
  timeout?: WorkerDeadlineKind
  /** Read when present; no current writer sets it. */
  message?: string
}

export interface EffectAmbiguousPayload {
  effectId: string
  attempt: number
  error?: ErrorInfo
}

export interface EffectCancelledPayload {
  effectId: string
  attempt: number
  reason?: string
  error?: ErrorInfo
}

export interface EffectCancelRequestedPayload {
  effectId: string
  attempt: number
  reason: string
  /** When an unanswered cancel request makes the effect ambiguous. */
  deadlineAt: number
}

export interface CancelRequestedPayload {
  threadId: string
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

/**
 * Input for a run recorded by a host that does not register the run's definition version
 * (docs/deploys.md): not yet matched or checked; a host that registers it applies it.
 */
export interface InputDeferredPayload {
  /** A signal's events; empty for an operation. */
  events: Array<{ type: string; payload: Json; threadId?: string }>
  /** An operator action or a wait URL's completion, recorded instead of events. */
  operation?: DeferredOperation
  identity?: Json
  /** The request's digest when it carried an idempotency key (retries compare it). */
  digest?: string
  /** The definition version the recording host lacked (`kind:name@version`). */
  missing: string
}

/** What a host without the run's version records of an operation for a host with it. */
export type DeferredOperation =
  | { type: 'cancel'; threadId?: string }
  | { type: 'retryEffect'; effectId: string }
  | { type: 'waitUrl'; tokenId: string; threadId: string; waitKey: string; value: Json }
  | { type: 'workerCallback'; callback: WorkerCallbackInput }
  | { type: 'releaseAttempt'; effectId: string; action: 'requeue' | 'fail' }

/**
 * An operator moved the run to another version of its definition (docs/deploys.md, "Migrating
 * runs"): from this event on the run, and the threads named, fold and execute by `toVersion`.
 */
export interface RunMigratedPayload {
  fromVersion: string
  toVersion: string
  /** The threads that were on `fromVersion` of the run's definition and go on under `toVersion`. */
  threadIds: string[]
  /** The shape fingerprint of `toVersion` (absent when it declares no shape). */
  definitionFingerprint?: string
  /** The operator's identity, when the call carried one. */
  by?: Json
}

/** A deferred input (at `seq`) applied by a host that executes the run, or refused there. */
export interface InputAppliedPayload {
  seq: number
  refused?: ErrorInfo
}

/** Every runtime event type with its payload. */
export interface RuntimeEventPayloads {
  'runtime.run.started': RunStartedPayload
  'runtime.run.queued': RunQueuedPayload
  'runtime.run.admitted': RunAdmittedPayload
  'runtime.run.completed': RunCompletedPayload
  'runtime.run.failed': RunFailedPayload
  'runtime.run.cancelled': RunCancelledPayload
  'runtime.run.attributes': RunAttributesPayload
  'runtime.run.migrated': RunMigratedPayload
  'runtime.thread.started': ThreadStartedPayload
  'runtime.thread.completed': ThreadCompletedPayload
  'runtime.thread.failed': ThreadFailedPayload
  'runtime.thread.cancelled': ThreadCancelledPayload
  'runtime.wait.registered': WaitRegisteredPayload
  'runtime.wait.satisfied': WaitSatisfiedPayload
  'runtime.wait.url.completed': WaitUrlCompletedPayload
  'runtime.timer.set': TimerSetPayload
  'runtime.timer.fired': TimerFiredPayload
  'runtime.effect.requested': EffectRequestedPayload
  'runtime.effect.attempt.started': EffectAttemptStartedPayload
  'runtime.effect.completed': EffectCompletedPayload
  'runtime.effect.failed': EffectFailedPayload
  'runtime.effect.retry.scheduled': EffectRetryScheduledPayload
  'runtime.effect.queued': EffectQueuedPayload
  'runtime.effect.dispatched': EffectDispatchedPayload
  'runtime.effect.heartbeat': EffectHeartbeatPayload
  'runtime.effect.timed_out': EffectTimedOutPayload
  'runtime.effect.ambiguous': EffectAmbiguousPayload
  'runtime.effect.cancelled': EffectCancelledPayload
  'runtime.effect.cancel.requested': EffectCancelRequestedPayload
  'runtime.cancel.requested': CancelRequestedPayload
  'runtime.signal.received': SignalReceivedPayload
  'runtime.input.deferred': InputDeferredPayload
  'runtime.input.applied': InputAppliedPayload
}

export type RuntimeEventType = keyof RuntimeEventPayloads

/** The payload an event of type `T` carries: typed for runtime types, any JSON otherwise. */
export type PayloadOf<T extends string> = T extends RuntimeEventType
  ? RuntimeEventPayloads[T]
  : Json

/** A recorded runtime event, its payload typed by its type (narrow it with `switch (e.type)`). */
export type RuntimeEvent<T extends RuntimeEventType = RuntimeEventType> = {
  [K in T]: Omit<EventEnvelope, 'type' | 'payload'> & { type: K; payload: RuntimeEventPayloads[K] }
}[T]

/** The runtime's own event types by name (docs/http.md, "Event types"; public surface). */
export const RT = {
  runStarted: 'runtime.run.started',
  runQueued: 'runtime.run.queued',
  runAdmitted: 'runtime.run.admitted',
  runCompleted: 'runtime.run.completed',
  runFailed: 'runtime.run.failed',
  runCancelled: 'runtime.run.cancelled',
  runAttributes: 'runtime.run.attributes',
  runMigrated: 'runtime.run.migrated',
  threadStarted: 'runtime.thread.started',
  threadCompleted: 'runtime.thread.completed',
  threadFailed: 'runtime.thread.failed',
  threadCancelled: 'runtime.thread.cancelled',
  waitRegistered: 'runtime.wait.registered',
  waitSatisfied: 'runtime.wait.satisfied',
  waitUrlCompleted: 'runtime.wait.url.completed',
  timerSet: 'runtime.timer.set',
  timerFired: 'runtime.timer.fired',
  effectRequested: 'runtime.effect.requested',
  effectAttemptStarted: 'runtime.effect.attempt.started',
  effectCompleted: 'runtime.effect.completed',
  effectFailed: 'runtime.effect.failed',
  effectRetryScheduled: 'runtime.effect.retry.scheduled',
  effectQueued: 'runtime.effect.queued',
  effectDispatched: 'runtime.effect.dispatched',
  effectHeartbeat: 'runtime.effect.heartbeat',
  effectTimedOut: 'runtime.effect.timed_out',
  effectAmbiguous: 'runtime.effect.ambiguous',
  effectCancelled: 'runtime.effect.cancelled',
  effectCancelRequested: 'runtime.effect.cancel.requested',
  cancelRequested: 'runtime.cancel.requested',
  signalReceived: 'runtime.signal.received',
  inputDeferred: 'runtime.input.deferred',
  inputApplied: 'runtime.input.applied',
} as const satisfies Record<string, RuntimeEventType>

export const RUNTIME_PREFIX = 'runtime.'

/**
 * `event` with its payload typed, when it is a runtime event. Only the runtime writes
 * `runtime.*` types (signals and emits of them are refused), so the catalog describes them.
 */
export const asRuntimeEvent = (event: EventEnvelope): RuntimeEvent | undefined =>
  event.type.startsWith(RUNTIME_PREFIX) ? (event as unknown as RuntimeEvent) : undefined
