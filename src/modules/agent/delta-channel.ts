import type { AgentDelta, DeltaSink } from './types.js'

export interface DeltaChannel extends DeltaSink {
  /** Deltas of `runId` published after the call; returns unsubscribe. */
  subscribe(runId: string, listener: (delta: AgentDelta) => void): () => void
}

/**
 * An in-process fan-out of streamed text, per run: pass it as `agent({ deltas })` and subscribe
 * beside `engine.subscribe`. Nothing is stored: a late subscriber gets only what follows, and
 * the durable `agent.message` carries the full text.
 *
 * @example
 * const deltas = deltaChannel()
 * const engine = createEngine({ modules: [agent({ definitions, deltas })] })
 * deltas.subscribe(runId, (d) => process.stdout.write(d.text))
 */
export function deltaChannel(): DeltaChannel {
  const listeners = new Map<string, Set<(delta: AgentDelta) => void>>()
  return {
    publish(delta) {
      const set = listeners.get(delta.runId)
      if (!set) return
      for (const listener of set) {
        try {
          listener(delta)
        } catch {
          // One failing listener must not starve the others or the model call.
        }
      }
    },
    subscribe(runId, listener) {
      let set = listeners.get(runId)
      if (!set) {
        set = new Set()
        listeners.set(runId, set)
      }
      set.add(listener)
      return () => {
        set.delete(listener)
        if (set.size === 0 && listeners.get(runId) === set) listeners.delete(runId)
      }
    },
  }
}
