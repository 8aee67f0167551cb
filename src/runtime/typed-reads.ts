import type { Definition } from '../core/definition.js'
import { runIsOf, runNotOfMessage } from '../core/definition.js'
import type { RunState } from '../core/envelope.js'
import { InvalidRequestError } from '../core/errors.js'

/**
 * The state `getRun`/`result` read, checked to be a run of `definition` when one is given:
 * their output type is the definition's, so a run of another definition is refused
 * (INVALID_REQUEST) rather than typed wrong.
 */
export function runOf(state: RunState, definition: Definition | string | undefined): RunState {
  if (definition === undefined || runIsOf(state, definition)) return state
  throw new InvalidRequestError(runNotOfMessage(state.runId, state, definition), {
    runId: state.runId,
    kind: state.kind,
    definitionName: state.definitionName,
    expected:
      typeof definition === 'string'
        ? { name: definition }
        : { kind: definition.kind, name: definition.name },
  })
}
