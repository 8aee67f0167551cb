import { mergeAttributes, type RunAttributes } from '../../core/attributes.js'
import type { EventEnvelope } from '../../core/envelope.js'
import { RT } from '../../core/runtime-events.js'

/**
 * A run's attributes after `events`: the start's, then each `runtime.run.attributes` change
 * (null removes). The memory store keeps them so; Postgres indexes the same two event types
 * with a trigger on the events table, SQLite in the appending transaction
 * (stores/sqlite/run-attributes.ts) (docs/operating-runs.md, "Attributes").
 */
export function attributesAfter(
  current: RunAttributes | undefined,
  events: readonly EventEnvelope[],
): RunAttributes | undefined {
  let next = current
  for (const event of events) {
    if (event.type !== RT.runStarted && event.type !== RT.runAttributes) continue
    const changes = (event.payload as { attributes?: RunAttributes } | null)?.attributes
    if (changes) next = mergeAttributes(next, changes)
  }
  return next
}
