import {
  describeClaimStore,
  describeEventStore,
  describeLeaseStore,
  describeSnapshotStore,
} from 'skein/testing/vitest'
import { memorySnapshotStore } from '../../src/stores/memory/memory-snapshot-store.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'

describeEventStore('memory', () => memoryStore())
describeSnapshotStore('memory', () => memorySnapshotStore())

describeLeaseStore('memory (one store, two handles)', () => {
  const store = memoryStore()
  return { a: store, b: store, close: () => store.close?.() }
})
describeClaimStore('memory (one store, two handles)', () => {
  const store = memoryStore()
  return { a: store, b: store, close: () => store.close?.() }
})
