import type { EventEnvelope } from '../../core/envelope.js'
import type { EventListener } from '../../core/ports.js'

/**
 * The in-process `subscribe` listeners of a store, by run. Listeners see a batch after its
 * commit; one throwing listener must not fail an append that is already durable, nor starve
 * the other listeners: its error goes to `onListenerError`.
 */
export function runListeners(onListenerError: (error: unknown, runId: string) => void) {
  const listeners = new Map<string, Set<EventListener>>()
  return {
    notify(runId: string, events: readonly EventEnvelope[]): void {
      if (events.length === 0) return
      const set = listeners.get(runId)
      if (!set) return
      for (const listener of [...set]) {
        try {
          listener(events)
        } catch (error) {
          onListenerError(error, runId)
        }
      }
    },
    subscribe(runId: string, listener: EventListener): () => void {
      let set = listeners.get(runId)
      if (!set) listeners.set(runId, (set = new Set()))
      set.add(listener)
      return () => {
        set.delete(listener)
        if (set.size === 0 && listeners.get(runId) === set) listeners.delete(runId)
      }
    },
    clear: () => listeners.clear(),
  }
}
