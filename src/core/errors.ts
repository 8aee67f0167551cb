import type { Json } from './json.js'

const BRAND = Symbol.for('skein.error')

/** Structured error information as recorded in the log and sent over HTTP. */
export type ErrorInfo = {
  code: string
  message: string
  details?: Json
}

/**
 * The base of every Skein error: a stable SCREAMING_SNAKE `code`, structured `details`,
 * and a realm-safe `is` check (works across bundles and vm contexts).
 */
export class SkeinError extends Error {
  readonly code: string
  readonly details: Json | undefined
  readonly [BRAND] = true

  constructor(code: string, message: string, details?: Json, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
    this.code = code
    this.details = details
  }

  static is(value: unknown): value is SkeinError {
    return typeof value === 'object' && value !== null && (value as any)[BRAND] === true
  }

  toInfo(): ErrorInfo {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details }
  }
}

/**
 * The type of each error class below, spelled out: left to inference, the declaration would
 * copy `ErrorConstructor`'s Node-only statics (`NodeJS.CallSite`), which a consumer without
 * `@types/node` cannot check.
 */
export interface SkeinErrorClass<C extends string> {
  new (message: string, details?: Json, options?: { cause?: unknown }): SkeinError
  readonly prototype: SkeinError
  readonly code: C
  is(value: unknown): value is SkeinError
}

/**
 * The codes of the engine's error classes below. The HTTP layer adds its own and maps every one
 * to a status (http/wire/status.ts); a module's own codes (`NODE_FAILED`, …) are any string.
 */
export type EngineErrorCode =
  | 'INVALID_REQUEST'
  | 'INVALID_INPUT'
  | 'INVALID_EVENT'
  | 'RUN_NOT_FOUND'
  | 'RUN_NOT_FINISHED'
  | 'DEFINITION_NOT_FOUND'
  | 'PROJECTION_NOT_FOUND'
  | 'PROJECTION_UNAVAILABLE'
  | 'EFFECT_NOT_FOUND'
  | 'START_CONFLICT'
  | 'EFFECT_NOT_RETRYABLE'
  | 'RUN_OVERLOADED'
  | 'WAKE_LIMIT_EXCEEDED'
  | 'SEQ_CONFLICT'
  | 'IDEMPOTENCY_CONFLICT'
  | 'MODULE_COMPOSITION'
  | 'INVALID_DEFINITION'
  | 'DETERMINISM_VIOLATION'
  | 'UNSUPPORTED_PROTOCOL'
  | 'ENGINE_STOPPED'
  | 'DEFINITION_CHANGED'
  | 'MIGRATION_REFUSED'
  | 'PORT_IN_USE'
  | 'SERVE_FAILED'
  | 'NOT_CONFIGURED'
  | 'STORE_ERROR'
  | 'STORE_UNAVAILABLE'
  | 'LEASE_LOST'
  | 'TERMINAL'
  | 'INVALID_SCHEDULE'
  | 'SCHEDULE_NOT_FOUND'
  | 'SCHEDULE_EXISTS'
  | 'WAIT_URL_NOT_FOUND'
  | 'WAIT_URL_GONE'
  | 'SIGNATURE_INVALID'
  | 'RESULT_TIMEOUT'
  | 'RUN_FAILED'
  | 'RUN_CANCELLED'
  | 'PAYLOAD_UNDECODABLE'
  | 'FLOW_KEY_FULL'

const define = <C extends EngineErrorCode>(code: C, name: string): SkeinErrorClass<C> => {
  const cls = class extends SkeinError {
    static readonly code = code
    constructor(message: string, details?: Json, options?: { cause?: unknown }) {
      super(code, message, details, options)
    }
    static override is(value: unknown): value is SkeinError {
      return SkeinError.is(value) && value.code === code
    }
  }
  Object.defineProperty(cls, 'name', { value: name })
  return cls
}

export const InvalidRequestError = define('INVALID_REQUEST', 'InvalidRequestError')
/** A schedule that cannot be created or updated: its cron, time zone, period or start (docs/schedules.md). */
export const InvalidScheduleError = define('INVALID_SCHEDULE', 'InvalidScheduleError')
export const ScheduleNotFoundError = define('SCHEDULE_NOT_FOUND', 'ScheduleNotFoundError')
/** Creating a schedule whose name is taken. */
export const ScheduleExistsError = define('SCHEDULE_EXISTS', 'ScheduleExistsError')
/** A wait URL's token that no wait URL has (a typo, a forgery): nothing was written. */
export const WaitUrlNotFoundError = define('WAIT_URL_NOT_FOUND', 'WaitUrlNotFoundError')
/** A wait URL already used, expired, or whose wait is over: nothing was written. */
export const WaitUrlGoneError = define('WAIT_URL_GONE', 'WaitUrlGoneError')
/** A wait URL's request whose HMAC signature header is missing or wrong: nothing was written. */
export const SignatureInvalidError = define('SIGNATURE_INVALID', 'SignatureInvalidError')
/** `result` waited its `timeoutMs` and the run is still not finished (docs/operating-runs.md). */
export const ResultTimeoutError = define('RESULT_TIMEOUT', 'ResultTimeoutError')
/** `result` of a run that failed: `details.error` is the run's error. */
export const RunFailedError = define('RUN_FAILED', 'RunFailedError')
/** `result` of a run that was cancelled. */
export const RunCancelledError = define('RUN_CANCELLED', 'RunCancelledError')
export const InvalidInputError = define('INVALID_INPUT', 'InvalidInputError')
export const InvalidEventError = define('INVALID_EVENT', 'InvalidEventError')
export const RunNotFoundError = define('RUN_NOT_FOUND', 'RunNotFoundError')
/** Deleting a run that has not finished, without `force` (docs/data-lifecycle.md): nothing was deleted. */
export const RunNotFinishedError = define('RUN_NOT_FINISHED', 'RunNotFinishedError')
export const DefinitionNotFoundError = define('DEFINITION_NOT_FOUND', 'DefinitionNotFoundError')
export const ProjectionNotFoundError = define('PROJECTION_NOT_FOUND', 'ProjectionNotFoundError')
/** A projection whose events were trimmed before any snapshot held its value. */
export const ProjectionUnavailableError = define(
  'PROJECTION_UNAVAILABLE',
  'ProjectionUnavailableError',
)
export const EffectNotFoundError = define('EFFECT_NOT_FOUND', 'EffectNotFoundError')
export const StartConflictError = define('START_CONFLICT', 'StartConflictError')
export const EffectNotRetryableError = define('EFFECT_NOT_RETRYABLE', 'EffectNotRetryableError')
export const RunOverloadedError = define('RUN_OVERLOADED', 'RunOverloadedError')
export const WakeLimitError = define('WAKE_LIMIT_EXCEEDED', 'WakeLimitError')
export const SeqConflictError = define('SEQ_CONFLICT', 'SeqConflictError')
export const IdempotencyConflictError = define('IDEMPOTENCY_CONFLICT', 'IdempotencyConflictError')
export const CompositionError = define('MODULE_COMPOSITION', 'CompositionError')
export const DefinitionError = define('INVALID_DEFINITION', 'DefinitionError')
export const DeterminismError = define('DETERMINISM_VIOLATION', 'DeterminismError')
/** A log or snapshot recorded with a newer log protocol version than this Skein reads. */
export const UnsupportedProtocolError = define('UNSUPPORTED_PROTOCOL', 'UnsupportedProtocolError')
export const EngineStoppedError = define('ENGINE_STOPPED', 'EngineStoppedError')
export const DefinitionChangedError = define('DEFINITION_CHANGED', 'DefinitionChangedError')
/**
 * A run that cannot move to the version asked (docs/deploys.md, "Migrating runs"): finished, or
 * its recorded progress does not fit the target; `details.differences` lists what differs.
 * Nothing was written.
 */
export const MigrationRefusedError = define('MIGRATION_REFUSED', 'MigrationRefusedError')
export const PortInUseError = define('PORT_IN_USE', 'PortInUseError')
export const ServeError = define('SERVE_FAILED', 'ServeError')
export const NotConfiguredError = define('NOT_CONFIGURED', 'NotConfiguredError')
export const StoreError = define('STORE_ERROR', 'StoreError')
/**
 * The store could not be reached or did not answer in time (a lost connection, a refused
 * connect, a timeout). Retrying later may succeed; a write that failed this way may or may not
 * have committed, so a writer re-reads the log before writing again (`expectedSeq` fences it).
 */
export const StoreUnavailableError = define('STORE_UNAVAILABLE', 'StoreUnavailableError')
/**
 * An append or lease renewal by a process that no longer owns the run (docs/storage.md): another
 * process took the run's lease with a newer epoch, or the lease expired and was taken. The
 * writer drops what it folded and does not run the attempts it would have started.
 */
export const LeaseLostError = define('LEASE_LOST', 'LeaseLostError')
/**
 * A stored payload the engine's codec cannot decode (docs/data-lifecycle.md): its key id is not
 * among the codec's keys, or the data fails authentication. `details` name the run, the part
 * (event, snapshot, task), its seq or id and the key id; the read fails and nothing is rewritten.
 */
export const PayloadUndecodableError = define('PAYLOAD_UNDECODABLE', 'PayloadUndecodableError')

/**
 * A new run's first append that was to take its flow-control slot (`AppendOptions.admit`) found
 * the key full, or runs waiting in it: nothing was written. The engine then queues the run the
 * ordinary way (docs/flow-control.md, "Across processes and hosts"); callers never see it.
 */
export const FlowKeyFullError = define('FLOW_KEY_FULL', 'FlowKeyFullError')

/**
 * Thrown by an effect handler to fail without retrying. Any other throw is retried by the
 * effect's policy.
 */
export class TerminalError extends SkeinError {
  constructor(message: string, details?: Json, options?: { cause?: unknown }) {
    super('TERMINAL' satisfies EngineErrorCode, message, details, options)
  }
  static override is(value: unknown): value is SkeinError {
    return SkeinError.is(value) && value.code === 'TERMINAL'
  }
}

/**
 * Turns anything thrown into an ErrorInfo that is safe to record or send: Skein errors keep
 * their code and details; anything else keeps only its message (never a stack).
 */
export function toErrorInfo(error: unknown): ErrorInfo {
  if (SkeinError.is(error)) return error.toInfo()
  if (error instanceof Error) return { code: 'ERROR', message: error.message || error.name }
  if (typeof error === 'string') return { code: 'ERROR', message: error }
  return { code: 'ERROR', message: 'non-error value thrown' }
}
