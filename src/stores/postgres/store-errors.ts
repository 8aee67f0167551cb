import { SkeinError, StoreError, StoreUnavailableError } from '../../core/errors.js'

/** Socket-level failures (Node) and postgres.js connection codes: the database is unreachable. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
])

/**
 * SQLSTATEs that mean "not now" rather than "wrong": connection exceptions (class 08), the
 * server terminating or refusing sessions (57P01–57P03), too many connections, and a
 * statement cancelled by `statement_timeout`.
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014'])

/** pg reports a dropped socket or its own timeouts as plain Errors without a code. */
const UNREACHABLE_MESSAGE =
  /connection terminated|connection timeout|timeout exceeded when trying to connect|query read timeout|not queryable|client was closed|cannot use a pool after calling end/i

const sqlstateOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown })?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

/** Whether `error` (from any driver) means the database could not be reached or timed out. */
export function isUnavailable(error: unknown): boolean {
  if (StoreUnavailableError.is(error)) return true
  if (SkeinError.is(error)) return false
  const code = (error as { code?: unknown })?.code
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true
  const sqlstate = sqlstateOf(error)
  if (sqlstate) return sqlstate.startsWith('08') || UNAVAILABLE_SQLSTATES.has(sqlstate)
  return error instanceof Error && UNREACHABLE_MESSAGE.test(error.message)
}

/**
 * Wraps a driver error so callers see one of two error types: `StoreUnavailableError`
 * (STORE_UNAVAILABLE, HTTP 503) when the database is unreachable or timed out, else
 * `StoreError` with the SQLSTATE kept. The unavailable message names the SQLSTATE or socket
 * code and the server's own words, never a host or a connection string.
 */
export function storeError(action: string, error: unknown): SkeinError {
  if (SkeinError.is(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  const sqlstate = sqlstateOf(error)
  if (isUnavailable(error)) {
    const code = (error as { code?: unknown })?.code
    const reason = sqlstate ? message : typeof code === 'string' ? code : message
    return new StoreUnavailableError(
      `postgres store: ${action} failed: the database is unavailable (${reason})`,
      typeof code === 'string' ? { action, reason: code } : { action },
      { cause: error },
    )
  }
  return new StoreError(
    `postgres store: ${action} failed: ${message}`,
    sqlstate ? { sqlstate } : undefined,
    { cause: error },
  )
}
