import type { EventStore, StoreCapabilities } from '../core/ports.js'
import { storeCapabilities } from '../core/store-capabilities.js'

/** What the engine's options ask of its store. */
export interface StoreNeeds {
  /** How many projectors the engine runs (they read the store's feed). */
  projectors: number
  /** `ownership` was passed (not `false`): the runs are owned through the store's leases. */
  ownership: boolean
  /** `trimAfterSnapshot` was passed: the store removes events behind snapshots. */
  trim: boolean
}

/**
 * The store's capabilities, checked once when the engine boots: the declaration against the
 * store's members (`storeCapabilities`), then against what the options need. Fails closed: an
 * option whose capability the store does not declare is a TypeError naming both, before the
 * engine reads or writes anything.
 */
export function checkStore(store: EventStore, needs: StoreNeeds): StoreCapabilities {
  const capabilities = storeCapabilities(store, 'createEngine')
  const refuse = (what: string, capability: keyof StoreCapabilities) => {
    throw new TypeError(
      `createEngine: ${what} a store with capabilities.${capability} (memoryStore, sqliteStore and postgresStore have it)`,
    )
  }
  if (needs.projectors > 0 && !capabilities.feed)
    refuse('projectors need a projection feed:', 'feed')
  if (needs.ownership && !capabilities.leases) refuse('ownership needs', 'leases')
  if (needs.trim && !capabilities.trim) refuse('trimAfterSnapshot needs', 'trim')
  return capabilities
}
