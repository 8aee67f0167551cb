// `skein/testing/vitest`: the contract suites, which register vitest tests (docs/testing.md): the
// store contracts, the whole-engine contract run against a store, and the HTTP host contract.
// Apart from `skein/testing` so that importing a fake clock or a faulty store needs no vitest.

export { describeClaimStore } from './claim-contract.js'
export type { EngineStorage, MakeEngineStorage } from './engine-contract/index.js'
export { describeEngine } from './engine-contract/index.js'
export type {
  HttpHost,
  HttpHostContractOptions,
  HttpHostDifferences,
  HttpHostServer,
  HttpHostSetup,
  MakeHttpHost,
  Transport,
} from './http-contract/index.js'
export { describeHttpHost } from './http-contract/index.js'
export { describeLeaseStore, type StorePair } from './lease-contract.js'
export { describeScheduleStore, type ScheduleStorePair } from './schedule-contract.js'
export type {
  ContractTest,
  SnapshotContractOptions,
  StoreContractOptions,
} from './store-contract.js'
export { describeEventStore, describeSnapshotStore } from './store-contract.js'
export { describeWorkerTaskStore, type WorkerTaskStorePair } from './worker-task-contract.js'
