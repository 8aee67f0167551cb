import type { WakeScheduler } from '../core/ports.js'
import { localScheduler } from '../runtime/local-scheduler.js'

/** A cell's scheduler: process-local timers that also say when the cell next has a deadline. */
export interface CellScheduler extends WakeScheduler {
  /** The earliest deadline the cell's engine has scheduled and not yet fired, if any. */
  next(): number | undefined
}

/**
 * The local scheduler of one cell, watched: the host writes `next()` to the registry when it
 * closes the cell, so the cell is opened again in time for its deadline (docs/operations.md, "Actor hosts and run registries").
 */
export function cellScheduler(): CellScheduler {
  const inner = localScheduler()
  const pending = new Map<string, number>()
  return {
    start(wake, clock) {
      inner.start((runId, dueAt) => {
        if (pending.get(runId) === dueAt) pending.delete(runId)
        return wake(runId, dueAt)
      }, clock)
    },
    schedule(runId, at) {
      pending.set(runId, at)
      inner.schedule(runId, at)
    },
    cancel(runId) {
      pending.delete(runId)
      inner.cancel(runId)
    },
    stop() {
      return inner.stop()
    },
    next() {
      let min: number | undefined
      for (const at of pending.values()) if (min === undefined || at < min) min = at
      return min
    },
  }
}
