/**
 * A set of hint listeners (`WorkerTaskStore.watch`): `first` runs when the first listener
 * arrives and `last` when the last leaves, so a store only follows changes while someone
 * listens. A listener that throws does not stop the others.
 */
export function hintListeners(hooks: { first?: () => void; last?: () => void } = {}) {
  const listeners = new Set<() => void>()
  return {
    watch(listener: () => void): () => void {
      const entry = () => listener()
      listeners.add(entry)
      if (listeners.size === 1) hooks.first?.()
      return () => {
        if (!listeners.delete(entry)) return
        if (listeners.size === 0) hooks.last?.()
      }
    },
    notify(): void {
      for (const listener of [...listeners]) {
        try {
          listener()
        } catch {
          // A hint listener's failure is its own.
        }
      }
    },
    get size() {
      return listeners.size
    },
  }
}
