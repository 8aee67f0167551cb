// Worker tasks a killed host never stored (docs/workers.md, "Durable tasks"): a host appends an
// attempt's `dispatched` event and stores its task just after, so a crash between the two leaves
// a dispatched attempt with no task. A booting host finds such attempts and stores their tasks,
// the same attempt, once (decisions.md, "A booting host stores the tasks a killed host never
// stored").
import type { RunFold } from '../core/fold/index.js'
import type { SummaryPage, SummaryQuery, WorkerTask } from '../core/ports.js'
import type { EngineContext } from './context.js'
import type { RunWriter } from './run-writer.js'
import { dispatchedTasks } from './worker-dispatch.js'

const keyOf = (task: WorkerTask) => `${task.effectId}\u0000${task.attempt}`

/**
 * In the run's queue: holds its lease (so nothing is appended to it meanwhile), folds what the
 * store holds, and stores the task of every attempt still `dispatched` (not started, no cancel
 * request) unless it is stored already. Safe to repeat: never a second row for an attempt, and
 * never a row for an attempt a claim has recorded `started` (a claim removes a task only after
 * that record is durable, and it cannot be written while this writer holds the lease).
 */
export async function restoreWorkerTasksOp(ctx: EngineContext, writer: RunWriter): Promise<void> {
  const restore = ctx.restoreTasks
  if (!restore) return
  await writer.seat?.hold()
  const fold = await writer.load()
  if (fold) await restore(dispatchedTasks(fold))
}

/**
 * At boot, in the background: every running run (newest first) whose fold has a dispatched
 * attempt with no task in the store gets its tasks restored through its queue (`restore`, which
 * waits for a live owner to let the run go and checks again under the lease). Returns the runs
 * restored.
 */
export async function restoreLostWorkerTasks(
  ctx: Pick<EngineContext, 'store' | 'log'>,
  listSummaries: (query: SummaryQuery) => Promise<SummaryPage>,
  readFold: (runId: string) => Promise<RunFold>,
  restore: (runId: string) => Promise<unknown>,
): Promise<string[]> {
  const stored = ctx.store.workerTasks
  if (!stored) return []
  const restored: string[] = []
  let cursor: string | undefined
  for (;;) {
    const page = await listSummaries({ status: 'running', limit: 100, cursor })
    for (const { runId } of page.runs) {
      const dispatched = dispatchedTasks(await readFold(runId))
      if (dispatched.length === 0) continue
      const present = new Set((await stored.list(runId)).map((s) => keyOf(s.task)))
      if (dispatched.every((task) => present.has(keyOf(task)))) continue
      try {
        await restore(runId)
        restored.push(runId)
      } catch (error) {
        ctx.log.warn(
          { runId, error: String(error) },
          'worker tasks of a dispatched attempt not restored; its deadlines still apply',
        )
      }
    }
    if (page.nextCursor === null) break
    cursor = page.nextCursor
  }
  if (restored.length > 0) {
    ctx.log.warn(
      { runs: restored.length, first: restored.slice(0, 10) },
      `${restored.length} run(s) had a worker attempt recorded dispatched whose task was never stored (a host was killed in between): their tasks are stored again`,
    )
  }
  return restored
}
