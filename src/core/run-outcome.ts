import type { RunState } from './envelope.js'
import { RunCancelledError, RunFailedError } from './errors.js'
import type { Json } from './json.js'

/** A terminal run's output, or its failure or cancellation as an error (`engine.result`, `client.result`). */
export function outcomeOf(state: RunState): Json | undefined {
  if (state.status === 'completed') return state.output
  if (state.status === 'cancelled') {
    throw new RunCancelledError(`run ${state.runId} was cancelled`, { runId: state.runId })
  }
  const error = state.error ?? { code: 'ERROR', message: 'the run failed' }
  throw new RunFailedError(`run ${state.runId} failed: ${error.code}: ${error.message}`, {
    runId: state.runId,
    error: error as unknown as Json,
  })
}
