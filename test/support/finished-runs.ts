import type { EventStore, RunStatus } from 'skein'
import { makeEnvelopes } from 'skein/testing'

export interface AppendedRuns {
  /** Run ids are `<prefix>-0` … */
  prefix: string
  count: number
  events: number
  status: RunStatus
  /** The run's last change (engine clock ms). */
  updatedAt: number
}

/** Writes `count` runs of `events` events each straight to the store, with the given meta. */
export async function appendRuns(store: EventStore, runs: AppendedRuns) {
  const meta = {
    status: runs.status,
    kind: 'workflow',
    definitionName: 'job',
    definitionVersion: '1',
    createdAt: 1,
    updatedAt: runs.updatedAt,
    nextDeadlineAt: null,
  }
  for (let i = 0; i < runs.count; i += 500) {
    const batch: Array<Promise<void>> = []
    for (let j = i; j < Math.min(runs.count, i + 500); j++) {
      const runId = `${runs.prefix}-${j}`
      batch.push(
        store.append(runId, makeEnvelopes(runId, 1, runs.events), { expectedSeq: 0, meta }),
      )
    }
    await Promise.all(batch)
  }
}

/**
 * Writes `count` runs (`old-0` …) of `events` events each straight to the store, completed
 * long ago (updatedAt 1 ms after the epoch): what a retention sweep deletes or archives.
 */
export function appendFinishedRuns(store: EventStore, count: number, events: number) {
  return appendRuns(store, { prefix: 'old', count, events, status: 'completed', updatedAt: 1 })
}
