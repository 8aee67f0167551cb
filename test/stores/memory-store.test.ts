import { memorySnapshotStore } from '../../src/stores/memory/memory-snapshot-store.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { describeEventStore, describeSnapshotStore } from '../../src/testing/store-contract.js'

// Known bug (reported): a throwing subscriber makes memoryStore's append reject after the
// events were written, and the listeners after it never see the batch.
describeEventStore('memory', () => memoryStore(), { knownFailures: ['throwing-listener'] })
describeSnapshotStore('memory', () => memorySnapshotStore())
