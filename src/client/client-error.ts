import { SkeinError } from '../core/errors.js'
import type { Json } from '../core/json.js'

const CLIENT_BRAND = Symbol.for('skein.clientError')

/**
 * A non-success answer from a Skein server, with the wire information kept:
 * `status` (0 when no HTTP response arrived), the error body's `code`, `message` and `details`.
 * A `SkeinError`, so `SkeinError.is` and the server's error codes work the same on both sides;
 * the client's own codes are `NETWORK_ERROR`, `STREAM_INTERRUPTED`, `STREAM_ENDED` and
 * `HTTP_<status>` for a body that is not a Skein error.
 */
export class ClientError extends SkeinError {
  readonly status: number
  readonly [CLIENT_BRAND] = true

  constructor(
    status: number,
    code: string,
    message: string,
    details?: Json,
    options?: { cause?: unknown },
  ) {
    super(code, message, details, options)
    this.status = status
  }

  /** Realm-safe, like `SkeinError.is`: true for a ClientError from any copy of the client. */
  static override is(value: unknown): value is ClientError {
    return SkeinError.is(value) && (value as { [CLIENT_BRAND]?: unknown })[CLIENT_BRAND] === true
  }
}

/** Reads a failed response's error body; bodies that are not Skein errors keep the status. */
export async function clientErrorOf(response: Response): Promise<ClientError> {
  let text = ''
  try {
    text = await response.text()
  } catch {
    // Body unreadable: status alone.
  }
  try {
    const body = JSON.parse(text) as {
      error?: { code?: unknown; message?: unknown; details?: Json }
    }
    if (body?.error && typeof body.error.code === 'string') {
      return new ClientError(
        response.status,
        body.error.code,
        typeof body.error.message === 'string' ? body.error.message : body.error.code,
        body.error.details,
      )
    }
  } catch {
    // Not JSON: fall through.
  }
  return new ClientError(
    response.status,
    `HTTP_${response.status}`,
    text.slice(0, 200) || response.statusText || `HTTP ${response.status}`,
  )
}

export const networkError = (error: unknown) =>
  new ClientError(
    0,
    'NETWORK_ERROR',
    error instanceof Error ? error.message : String(error),
    undefined,
    {
      cause: error,
    },
  )
