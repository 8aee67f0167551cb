import type { EventEnvelope } from './envelope.js'
import type { WaitRecord } from './fold/index.js'
import { isSubset } from './json.js'
import { RUNTIME_PREFIX } from './runtime-events.js'

/**
 * Whether `event` satisfies an open event wait: same type, payload contains `match`, and the
 * thread rule: a wait naming a thread takes only that thread's events; an external signal
 * addressed to a thread is only for that thread's waits; anything else matches.
 */
export function matchesWait(wait: WaitRecord, event: EventEnvelope): boolean {
  if (wait.status !== 'open' || !('event' in wait.on)) return false
  if (event.type.startsWith(RUNTIME_PREFIX)) return false
  const on = wait.on.event
  if (on.type !== event.type) return false
  if (on.threadId !== undefined) {
    if (event.threadId !== on.threadId) return false
  } else if (event.origin === 'external' && event.threadId && event.threadId !== wait.threadId) {
    return false
  }
  return isSubset(on.match, event.payload)
}
