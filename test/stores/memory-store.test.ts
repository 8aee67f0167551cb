import { memorySnapshotStore } from '../../src/stores/memory/memory-snapshot-store.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { describeEventStore, describeSnapshotStore } from '../../src/testing/store-contract.js'

describeEventStore('memory', () => memoryStore())
describeSnapshotStore('memory', () => memorySnapshotStore())
