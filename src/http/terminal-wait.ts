import { InvalidRequestError } from '../core/errors.js'
import { intQuery } from './validate.js'

/** The longest `timeoutMs` of one long-poll on a run; a client waiting longer asks again. */
export const MAX_LONG_POLL_MS = 60_000
/** A long-poll's `timeoutMs` when the request gives none. */
export const DEFAULT_LONG_POLL_MS = 30_000

/**
 * `GET /runs/:id?wait=terminal&timeoutMs=…`: how long to hold the request for the run to
 * finish (undefined: answer at once). The answer is the run's state either way, terminal or
 * not yet; the bound keeps a request well inside what proxies and clients let one hang.
 */
export function terminalWaitOf(url: URL): number | undefined {
  const wait = url.searchParams.getAll('wait')
  const timeoutMs = intQuery(url, 'timeoutMs')
  if (wait.length === 0) {
    if (timeoutMs !== undefined) {
      throw new InvalidRequestError('timeoutMs needs wait=terminal')
    }
    return undefined
  }
  if (wait.length > 1 || wait[0] !== 'terminal') {
    throw new InvalidRequestError('query parameter wait must be "terminal"', {
      wait: wait.join(','),
    })
  }
  if (timeoutMs !== undefined && timeoutMs > MAX_LONG_POLL_MS) {
    throw new InvalidRequestError(
      `timeoutMs of a long-poll is at most ${MAX_LONG_POLL_MS} ms: ask again for longer`,
      { timeoutMs },
    )
  }
  return timeoutMs ?? DEFAULT_LONG_POLL_MS
}
