import { RunNotFoundError } from '../core/errors.js'
import type { DefinitionVersionKey, EventStore } from '../core/ports.js'
import type { OwnershipOptions } from '../runtime/options.js'
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
  /**
   * Cells over a shared store: the run ownership every cell's engine gets (one owner id for
   * the host process), so the store's lease makes each run's single writer.
   */
  readonly ownership?: OwnershipOptions
  /**
   * Cells over a shared store: takes the leases of runs due by `now` that nobody holds (a
   * deadline, or the runs of a host that died) for this host, at most `limit`. The host opens
   * their cells; with it the host keeps no wake times in the registry (the store's run index is
   * where deadlines wait, docs/operations.md, "Actor hosts and run registries"). With `only`,
   * just the runs of those definition versions (the ones the host registers: docs/deploys.md).
   */
  claimDue?(now: number, limit: number, only?: readonly DefinitionVersionKey[]): Promise<string[]>
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
