import type { EventStore, LeaseStore } from '../core/ports.js'
import { storeCapabilities } from '../core/store-capabilities.js'
import type { OwnershipOptions } from '../runtime/options.js'
import { defaultOwner } from '../runtime/system.js'
import { type CellStore, runNotFound } from './cell-store.js'

export interface SharedCellsOptions {
  /**
   * The one store every cell's engine runs on (a `postgresStore`, or a `sqliteStore` file several
   * processes share). It needs leases (`capabilities.leases`): they make each run's single writer. The
   * application owns it: closing a cell, or the host, never closes it.
   */
  store: EventStore
  /**
   * The cell engines' run ownership (docs/engine.md, "Several processes on one store"). One
   * owner id for the whole host process (default `<host>:<pid>:<random>`), so a run the host
   * claims is its cells' to write. `pollMs` does not apply: the host claims due runs every
   * `sweepMs` of its own.
   */
  ownership?: OwnershipOptions
}

/**
 * One run's view of the shared store, what its cell's engine sees: the run's own log, and the
 * store as holding only that run (`listRuns`, no run index, no feed), so booting the cell folds
 * this run alone. Claiming due runs is the host's (`claimDue` of the cell store): the cell's
 * engine claims nothing. Closing the view leaves the shared store open.
 */
function runView(shared: EventStore, leases: LeaseStore, runId: string): EventStore {
  const has = storeCapabilities(shared, 'sharedCells')
  return {
    // The shared store's own, but no run index, feed, claims, schedules or wait URLs: the cell
    // engine serves one run, and the host does the rest.
    capabilities: {
      subscribe: has.subscribe,
      trim: has.trim,
      flush: has.flush,
      snapshots: has.snapshots,
      deleteRun: has.deleteRun,
      leases: true,
    },
    append: (id, events, options) => shared.append(id, events, options),
    read: (id, options) => shared.read(id, options),
    tail: (id) => shared.tail(id),
    bounds: (id) => shared.bounds(id),
    listRuns: async () => ((await shared.tail(runId)) > 0 ? [runId] : []),
    leases: {
      shared: true,
      readLease: (id) => leases.readLease(id),
      renewLease: (id, claim) => leases.renewLease(id, claim),
      releaseLease: (id, owner, epoch) => leases.releaseLease(id, owner, epoch),
      claimDue: async () => [],
      markDue: (id, at) => leases.markDue(id, at),
    },
    close: async () => {},
    ...(has.trim && { trim: shared.trim!.bind(shared) }),
    ...(has.deleteRun && { deleteRun: shared.deleteRun!.bind(shared) }),
    ...(has.subscribe && { subscribe: shared.subscribe!.bind(shared) }),
    ...(has.flush && { flush: shared.flush!.bind(shared) }),
    ...(has.snapshots && { snapshots: shared.snapshots }),
  }
}

/**
 * Cells over one shared store (Postgres, or one SQLite file): every cell's engine runs on the
 * same store, with run ownership on, so a run's single writer comes from the store's lease
 * (epoch-fenced appends), not from a file lock. Several host processes can serve the same runs:
 * a read is served by whichever host is asked, a write waits for the lease, and a host that dies
 * has its runs taken over by another once their leases expire (the hosts claim due runs from the
 * store's run index, `claimDue`). A refused start wrote nothing, so `discard` has nothing to
 * remove.
 *
 * @example
 * const store = postgresStore({ connectionString })
 * const host = createActorHost({ modules, cells: sharedCells({ store }), registry: postgresRegistry({ store }) })
 */
export function sharedCells(options: SharedCellsOptions): CellStore {
  const { store } = options
  if (!store || !storeCapabilities(store, 'sharedCells').leases) {
    throw new TypeError(
      'sharedCells: the store needs leases (capabilities.leases): use postgresStore or sqliteStore',
    )
  }
  const leases = store.leases!
  const owner = options.ownership?.owner ?? defaultOwner()
  const leaseMs = options.ownership?.leaseMs ?? 10_000
  return {
    // The cells' engines claim nothing: the host claims for them every `sweepMs`.
    ownership: { ...options.ownership, owner, claimDue: false },
    async open(runId, create) {
      if (!create && (await store.tail(runId)) === 0) throw runNotFound(runId)
      return { store: runView(store, leases, runId), close: async () => {} }
    },
    async discard() {
      // A start refused before anything was written left nothing in the store.
    },
    async claimDue(now, limit, only) {
      const claimed = await leases.claimDue(owner, now, now + leaseMs, limit, only)
      return claimed.map((c) => c.runId)
    },
  }
}
