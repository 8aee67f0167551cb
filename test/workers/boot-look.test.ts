// The boot's one pass over the running runs (src/runtime/worker-task-restore.ts): undeadlined
// worker attempts are named once the newest 1,000 runs are seen; with a restore, every running
// run is looked at and each whose dispatched attempt has no stored task is restored; each run is
// folded once. Fakes stand in for the engine's listing, fold reads and task store.
import { describe, expect, it } from 'vitest'
import type { RunFold } from '../../src/core/fold/index.js'
import type { SummaryPage, SummaryQuery } from '../../src/core/ports.js'
import { lookAtWorkerAttempts } from '../../src/runtime/worker-task-restore.js'

const RUNS = 1_250

/** Newest first, in pages of the query's limit; every run has one undeadlined worker attempt. */
function fleet() {
  const ids = Array.from({ length: RUNS }, (_, i) => `run-${RUNS - i}`)
  const folded: string[] = []
  const warnings: Array<{ fields: Record<string, unknown>; msg: string; afterFolds: number }> = []
  const list = async (q: SummaryQuery): Promise<SummaryPage> => {
    const from = q.cursor ? Number(q.cursor) : 0
    const to = Math.min(from + (q.limit ?? 100), ids.length)
    return {
      runs: ids.slice(from, to).map((runId) => ({ runId }) as SummaryPage['runs'][number]),
      nextCursor: to < ids.length ? String(to) : null,
    }
  }
  const read = async (runId: string) => {
    folded.push(runId)
    return {
      state: { runId, status: 'running' },
      effects: {
        e1: { effectId: 'e1', type: 'w.x', execution: 'worker', status: 'dispatched', attempt: 1 },
      },
    } as unknown as RunFold
  }
  const log = {
    warn: (fields: Record<string, unknown>, msg: string) =>
      warnings.push({ fields, msg, afterFolds: folded.length }),
  }
  return { ids, folded, warnings, list, read, log }
}

describe('the boot look at worker attempts', () => {
  it('without a restore, folds the newest 1,000 running runs once each and names their attempts', async () => {
    const f = fleet()
    const store = {} as never
    const restored = await lookAtWorkerAttempts(
      { store, log: f.log as never },
      f.list,
      f.read,
      undefined,
    )
    expect(restored).toEqual([])
    expect(f.folded).toEqual(f.ids.slice(0, 1_000))
    expect(f.warnings).toHaveLength(1)
    expect(f.warnings[0].fields).toMatchObject({ attempts: 1_000 })
    expect((f.warnings[0].fields.first as Array<{ runId: string }>)[0].runId).toBe(`run-${RUNS}`)
  })

  it('with a restore, looks at every running run, names the undeadlined ones at 1,000, and restores only runs lacking their task', async () => {
    const f = fleet()
    const stored = new Set(f.ids.filter((_, i) => i % 5 !== 0))
    const store = {
      workerTasks: {
        list: async (runId: string) =>
          stored.has(runId) ? [{ task: { runId, effectId: 'e1', attempt: 1 } }] : [],
      },
    } as never
    const asked: string[] = []
    const restored = await lookAtWorkerAttempts(
      { store, log: f.log as never },
      f.list,
      f.read,
      async (runId) => {
        asked.push(runId)
      },
    )
    expect(f.folded).toEqual(f.ids)
    const lacking = f.ids.filter((id) => !stored.has(id))
    expect(asked).toEqual(lacking)
    expect(restored).toEqual(lacking)
    const named = f.warnings.filter((w) => w.fields.attempts !== undefined)
    expect(named).toHaveLength(1)
    expect(named[0].fields).toMatchObject({ attempts: 1_000 })
    // Named when the 1,000th run was folded, before the rest of the pass.
    expect(named[0].afterFolds).toBe(1_000)
    const summary = f.warnings.find((w) => w.fields.runs !== undefined)
    expect(summary?.fields).toMatchObject({ runs: lacking.length })
  })
})
