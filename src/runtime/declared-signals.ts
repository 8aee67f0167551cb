import { definitionLabel } from '../core/definition.js'
import { isTerminal } from '../core/envelope.js'
import { InvalidEventError } from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { Registry } from '../core/registry.js'
import type { StandardSchema } from '../core/schema.js'
import { type CheckedEvent, requireJson, validateWith } from './validate.js'

/**
 * The events of a signal with each payload a definition of the run declares a schema for
 * (`signals` on the definition, docs/workflows.md "Signals") validated by it: in the run's
 * queue, before anything is written, so a bad payload is INVALID_EVENT with nothing written.
 * The definitions asked are the addressed thread's (`threadId`), else every open thread's. The
 * payload recorded is the schema's output. A run whose definitions declare none costs a lookup.
 */
export async function checkDeclaredSignals(
  registry: Registry,
  fold: RunFold,
  events: readonly CheckedEvent[],
  maxBytes: number,
): Promise<CheckedEvent[]> {
  const out = [...events]
  for (const [index, event] of events.entries()) {
    let recorded: Json | undefined
    for (const { label, schema } of schemasFor(registry, fold, event)) {
      const value = await validateWith(
        schema,
        event.payload,
        `events[${index}] (${event.type}) does not fit the signal ${label} declares`,
        InvalidEventError,
      )
      recorded ??= requireJson(value, `event ${event.type} payload`, maxBytes, InvalidEventError)
    }
    if (recorded !== undefined) out[index] = { ...event, payload: recorded }
  }
  return out
}

function schemasFor(
  registry: Registry,
  fold: RunFold,
  event: CheckedEvent,
): Array<{ label: string; schema: StandardSchema }> {
  const threads = Object.values(fold.state.threads).filter((thread) =>
    event.threadId === undefined ? !isTerminal(thread.status) : thread.threadId === event.threadId,
  )
  const found: Array<{ label: string; schema: StandardSchema }> = []
  const seen = new Set<string>()
  for (const thread of threads) {
    const ref = {
      kind: thread.kind,
      name: thread.definitionName,
      version: thread.definitionVersion,
    }
    const label = definitionLabel(ref)
    if (seen.has(label)) continue
    seen.add(label)
    const schema = registry.resolve(ref)?.signals?.[event.type]
    if (schema) found.push({ label, schema })
  }
  return found
}
