export { faultyStore } from './fault-store.js'
export type { ManualClock } from './manual-clock.js'
export { manualClock } from './manual-clock.js'
export { describeEventStore, describeSnapshotStore } from './store-contract.js'
