import type { EventStore, StoreCapabilities } from './ports.js'

export type StoreCapability = keyof StoreCapabilities

/** The member each capability stands for: the one place the two names meet. */
export const CAPABILITY_MEMBERS: Readonly<Record<StoreCapability, keyof EventStore>> = {
  subscribe: 'subscribe',
  summaries: 'listSummaries',
  deadlines: 'listRunsWithDeadlines',
  trim: 'trim',
  flush: 'flush',
  snapshots: 'snapshots',
  leases: 'leases',
  feed: 'feed',
  claims: 'claims',
  schedules: 'schedules',
  waitUrls: 'waitUrls',
  flow: 'flow',
  workerTasks: 'workerTasks',
  deleteRun: 'deleteRun',
  deleteFinished: 'deleteFinished',
  countActiveRuns: 'countActiveRuns',
  restoreTrimmed: 'restoreTrimmed',
  idempotencyKeys: 'idempotencyKeys',
}

const NAMES = Object.keys(CAPABILITY_MEMBERS) as StoreCapability[]

/** Every capability declared: what `sqliteStore` and `postgresStore` have. */
export const EVERY_CAPABILITY: StoreCapabilities = Object.freeze(
  Object.fromEntries(NAMES.map((name) => [name, true])) as Record<StoreCapability, boolean>,
)

/**
 * The store's declaration, every capability spelled out, once checked against its members: a
 * declared capability whose member is missing, or a member whose capability is not declared, is
 * a TypeError naming both (nothing is guessed from what happens to be there). `where` prefixes
 * the message (`createEngine`, `sharedCells`).
 */
export function storeCapabilities(store: EventStore, where: string): StoreCapabilities {
  const declared: Partial<Record<string, unknown>> = store.capabilities ?? {}
  if (typeof declared !== 'object' || declared === null) {
    throw new TypeError(`${where}: store.capabilities must be an object of booleans`)
  }
  for (const key of Object.keys(declared)) {
    if (!(key in CAPABILITY_MEMBERS)) {
      throw new TypeError(
        `${where}: store.capabilities.${key} is not a capability (known: ${NAMES.join(', ')})`,
      )
    }
  }
  const resolved = {} as Record<StoreCapability, boolean>
  for (const name of NAMES) {
    const member = CAPABILITY_MEMBERS[name]
    const value = declared[name] ?? false
    if (typeof value !== 'boolean') {
      throw new TypeError(`${where}: store.capabilities.${name} must be a boolean, got ${value}`)
    }
    const present = store[member] !== undefined && store[member] !== null
    if (value && !present) {
      throw new TypeError(
        `${where}: the store declares capabilities.${name} but has no store.${member}`,
      )
    }
    if (!value && present) {
      throw new TypeError(
        `${where}: the store has store.${member} but does not declare capabilities.${name}: true`,
      )
    }
    resolved[name] = value
  }
  return resolved
}
