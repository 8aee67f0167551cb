import type { EngineErrorCode } from '../../core/errors.js'

/** Codes only the HTTP layer gives (routing, auth, body limits, a hidden internal error). */
export type HttpErrorCode =
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'INTERNAL'
  | 'NOT_SUPPORTED'

/** Every code an error body of the API can carry. */
export type ErrorCode = EngineErrorCode | HttpErrorCode

/**
 * The one table from error code to HTTP status (docs/http.md, "Errors"). Typed: a code without a
 * status, or a status for a code that does not exist, fails the type-check. It lives with the
 * wire format because the client reads it too (the status of a streaming start's `error` frame).
 */
const STATUS = {
  INVALID_REQUEST: 400,
  INVALID_INPUT: 400,
  INVALID_EVENT: 400,
  INVALID_SCHEDULE: 400,
  SIGNATURE_INVALID: 401,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  RUN_NOT_FOUND: 404,
  DEFINITION_NOT_FOUND: 404,
  PROJECTION_NOT_FOUND: 404,
  EFFECT_NOT_FOUND: 404,
  SCHEDULE_NOT_FOUND: 404,
  WAIT_URL_NOT_FOUND: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  START_CONFLICT: 409,
  RUN_NOT_FINISHED: 409,
  DEFINITION_CHANGED: 409,
  MIGRATION_REFUSED: 409,
  EFFECT_NOT_RETRYABLE: 409,
  SEQ_CONFLICT: 409,
  FLOW_KEY_FULL: 409,
  IDEMPOTENCY_CONFLICT: 409,
  SCHEDULE_EXISTS: 409,
  RUN_FAILED: 409,
  RUN_CANCELLED: 409,
  PROJECTION_UNAVAILABLE: 410,
  WAIT_URL_GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RUN_OVERLOADED: 429,
  WAKE_LIMIT_EXCEEDED: 500,
  UNSUPPORTED_PROTOCOL: 500,
  INTERNAL: 500,
  // Faults of the program or its setup, never of the request: their text stays out of bodies.
  MODULE_COMPOSITION: 500,
  INVALID_DEFINITION: 500,
  DETERMINISM_VIOLATION: 500,
  PORT_IN_USE: 500,
  SERVE_FAILED: 500,
  STORE_ERROR: 500,
  PAYLOAD_UNDECODABLE: 500,
  TERMINAL: 500,
  NOT_SUPPORTED: 501,
  NOT_CONFIGURED: 503,
  ENGINE_STOPPED: 503,
  STORE_UNAVAILABLE: 503,
  LEASE_LOST: 503,
  RESULT_TIMEOUT: 504,
} as const satisfies Record<ErrorCode, number>

/** The table, readable by any string code (a module's own code is not in it). */
export const HTTP_STATUS_BY_CODE: Readonly<Record<string, number>> = STATUS

/** The status of a code; codes outside the table (a module's own) are 500. */
export function httpStatusOf(code: string): number {
  return HTTP_STATUS_BY_CODE[code] ?? 500
}

/** 5xx codes whose message is safe to send: each names only what the caller can act on. */
export const PUBLIC_5XX: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'WAKE_LIMIT_EXCEEDED',
  'INTERNAL',
  'NOT_SUPPORTED',
  'NOT_CONFIGURED',
  'ENGINE_STOPPED',
  // Its message names only the run and protocol versions, and says what to do.
  'UNSUPPORTED_PROTOCOL',
  'STORE_UNAVAILABLE',
  // Names only the run: another process owns it now; retrying reaches the new owner.
  'LEASE_LOST',
  // Names only the run, the seq and the key id it lacks: the operator's fix is the key.
  'PAYLOAD_UNDECODABLE',
])
