import { RunNotFoundError } from '../core/errors.js'
import type { EventStore } from '../core/ports.js'
import { memoryStore } from '../stores/memory/memory-store.js'

/** The private storage of one open cell: the run's event store, and how to let it go. */
export interface CellStorage {
  store: EventStore
  close(): Promise<void>
}

/**
 * Where cells keep their runs (the actor host's `cells` option). `open` gives the one writer
 * of a run its storage: with `create` false, a run that has none is `RUN_NOT_FOUND` (a read
 * never creates a cell). `discard` removes the storage of a run whose start was refused.
 */
export interface CellStore {
  /** `waitMs`: how long to wait for another process that holds the cell (default: the store's). */
  open(runId: string, create: boolean, options?: { waitMs?: number }): Promise<CellStorage>
  discard(runId: string): Promise<void>
  close?(): Promise<void>
}

export const runNotFound = (runId: string) =>
  new RunNotFoundError(`run ${runId} not found`, { runId })

/**
 * Cells in memory (an actor host without `dir`): each run keeps its own memory store while the
 * host lives; a closed cell keeps its store, so closing frees the engine, not the events.
 *
 * @example
 * const host = createActorHost({ modules, cells: memoryCells() })
 */
export function memoryCells(): CellStore {
  const stores = new Map<string, EventStore>()
  return {
    async open(runId, create) {
      let store = stores.get(runId)
      if (!store) {
        if (!create) throw runNotFound(runId)
        store = memoryStore()
        stores.set(runId, store)
      }
      return { store, close: async () => {} }
    },
    async discard(runId) {
      stores.delete(runId)
    },
  }
}
