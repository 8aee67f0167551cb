export type {
  FailNextOptions,
  FaultDecision,
  FaultMethod,
  FaultPlan,
  FaultWhen,
  FaultyStore,
  InjectedFault,
  StoreCall,
} from './fault-store.js'
export { faultyStore, isInjectedFault } from './fault-store.js'
export type { GoldenMismatch, GoldenReport } from './golden-logs.js'
export { checkGoldenLogs, parseLog, recordGoldenLog } from './golden-logs.js'
export type { ManualClock } from './manual-clock.js'
export { manualClock } from './manual-clock.js'
export type { NextCommand, ReplayedLog, ReplayOptions } from './replay-log.js'
export { replayLog } from './replay-log.js'
export type {
  ContractTest,
  SnapshotContractOptions,
  StoreContractOptions,
} from './store-contract.js'
export { describeEventStore, describeSnapshotStore, makeEnvelopes } from './store-contract.js'
