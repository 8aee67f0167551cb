import type { RunState } from '../core/envelope.js'
import type { SkeinError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import { outcomeOf } from '../core/run-outcome.js'
import { httpStatusOf } from '../http/wire/status.js'
import { ClientError } from './client-error.js'

/** The server holds one long-poll at most this long (its MAX_LONG_POLL_MS). */
const LONG_POLL_MS = 60_000

/**
 * `client.result`: long-polls until the run is terminal or `timeoutMs` (wall time) has passed,
 * then gives the output or the run's failure as a ClientError with the engine's code.
 */
export async function awaitResult(
  runId: string,
  timeoutMs: number | undefined,
  poll: (timeoutMs: number) => Promise<{ state: RunState }>,
): Promise<Json | undefined> {
  if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 0)) {
    throw new ClientError(0, 'INVALID_REQUEST', 'timeoutMs must be an integer >= 0', {
      timeoutMs: String(timeoutMs),
    })
  }
  const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs
  for (;;) {
    const left = Math.max(0, deadline - Date.now())
    const { state } = await poll(Math.min(LONG_POLL_MS, left))
    if (state.status !== 'running') {
      try {
        return outcomeOf(state)
      } catch (error) {
        const e = error as SkeinError
        throw new ClientError(httpStatusOf(e.code), e.code, e.message, e.details)
      }
    }
    if (Date.now() >= deadline) {
      throw new ClientError(
        httpStatusOf('RESULT_TIMEOUT'),
        'RESULT_TIMEOUT',
        `run ${runId} did not finish within ${timeoutMs} ms (it is ${state.status}; it goes on)`,
        { runId, status: state.status, timeoutMs: timeoutMs ?? null },
      )
    }
  }
}
