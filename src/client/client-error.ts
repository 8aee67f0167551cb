import type { Json } from '../core/json.js'

/**
 * A non-success answer from a Skein server, with the wire information kept (STYLE 12):
 * `status` (0 when no HTTP response arrived), the error body's `code`, `message` and `details`.
 */
export class ClientError extends Error {
  readonly status: number
  readonly code: string
  readonly details: Json | undefined

  constructor(
    status: number,
    code: string,
    message: string,
    details?: Json,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'ClientError'
    this.status = status
    this.code = code
    this.details = details
  }

  static is(value: unknown): value is ClientError {
    return (
      value instanceof Error && value.name === 'ClientError' && 'status' in value && 'code' in value
    )
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
