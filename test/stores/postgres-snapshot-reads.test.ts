// A list of a run's snapshots on Postgres (src/stores/postgres/postgres-snapshot-store.ts) sees
// a saved snapshot wherever it is: buffered, in the group commit in flight, or committed, also
// when the group commit takes and settles the buffer while the list's read is on its way.
import { describe, expect, it } from 'vitest'
import {
  postgresSnapshotStore,
  type SnapshotIo,
} from '../../src/stores/postgres/postgres-snapshot-store.js'

/** An io whose reads wait until `answer` is called: the test decides what lands meanwhile. */
function heldIo() {
  const reads: Array<(rows: unknown[]) => void> = []
  const io: SnapshotIo = {
    read: () => new Promise((resolve) => reads.push(resolve)),
    scheduleWrite: () => {},
    drain: async () => {},
    latest: async () => undefined,
    guard: () => {},
    ready: async () => {},
    sql: { list: 'list', prune: 'prune' },
  }
  return { io, answer: (rows: unknown[]) => reads.shift()?.(rows) }
}

describe('Postgres snapshot reads', () => {
  it('a list whose read started before the group commit took the buffer still sees the snapshot', async () => {
    const { io, answer } = heldIo()
    const store = postgresSnapshotStore(io)
    await store.save({ runId: 'r2', seq: 7, createdAt: 1, format: 1, data: { n: 7 } })
    const listed = store.list('r2')
    // Meanwhile the group commit takes the buffer, commits it and settles; the read began
    // before that commit, so it does not see the row.
    store.take()
    store.settled()
    answer([])
    expect(await listed).toEqual([7])
  })
})
