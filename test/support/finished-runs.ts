import type { EventStore } from 'skein'
import { makeEnvelopes } from 'skein/testing'

/**
 * Writes `count` runs (`old-0` …) of `events` events each straight to the store, completed
 * long ago (updatedAt 1 ms after the epoch): what a retention sweep deletes or archives.
 */
export async function appendFinishedRuns(store: EventStore, count: number, events: number) {
  const meta = {
    status: 'completed' as const,
    kind: 'workflow',
    definitionName: 'job',
    definitionVersion: '1',
    createdAt: 1,
    updatedAt: 1,
    nextDeadlineAt: null,
  }
  for (let i = 0; i < count; i += 500) {
    const batch: Array<Promise<void>> = []
    for (let j = i; j < Math.min(count, i + 500); j++) {
      const runId = `old-${j}`
      batch.push(store.append(runId, makeEnvelopes(runId, 1, events), { expectedSeq: 0, meta }))
    }
    await Promise.all(batch)
  }
}
