// `skein/testing/vitest`: the store contract suites, which register vitest tests (STYLE §3).
// Apart from `skein/testing` so that importing a fake clock or a faulty store needs no vitest.

export type {
  ContractTest,
  SnapshotContractOptions,
  StoreContractOptions,
} from './store-contract.js'
export { describeEventStore, describeSnapshotStore } from './store-contract.js'
