// Worker tasks a killed host never stored (docs/workers.md, "Durable tasks"): a host appends an
// attempt's `dispatched` event and stores its task just after, so a crash between the two leaves
// a dispatched attempt with no task. A booting host finds such attempts and stores their tasks,
// the same attempt, once (decisions.md, "A booting host stores the tasks a killed host never
// stored").
import type { RunFold } from '../core/fold/index.js'
import type { SummaryPage, SummaryQuery, WorkerTask, WorkerTaskStore } from '../core/ports.js'
import type { EngineContext } from './context.js'
import type { RunWriter } from './run-writer.js'
import { dispatchedTasks } from './worker-dispatch.js'
import {
  type UndeadlinedAttempt,
  undeadlinedAttempts,
  warnUndeadlinedAttempts,
} from './worker-operator.js'

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

/** Running runs the boot look names undeadlined attempts among (the newest). */
const UNDEADLINED_RUNS = 1_000

/**
 * At boot, in the background, one pass over the running runs (newest first), each folded once:
 * worker attempts with no deadline among the newest 1,000 are named in the log once those are
 * seen (worker-operator.ts); with `restore`, every run whose fold has a dispatched attempt with no
 * task in the store gets its tasks restored through its queue (`restore`, which waits for a live
 * owner to let the run go and checks again under the lease). Without `restore` the pass stops
 * after those 1,000. Returns the runs restored.
 */
export async function lookAtWorkerAttempts(
  ctx: Pick<EngineContext, 'store' | 'log'>,
  listSummaries: (query: SummaryQuery) => Promise<SummaryPage>,
  readFold: (runId: string) => Promise<RunFold>,
  restore: ((runId: string) => Promise<unknown>) | undefined,
): Promise<string[]> {
  const stored = restore ? ctx.store.workerTasks : undefined
  const undeadlined: UndeadlinedAttempt[] = []
  const restored: string[] = []
  let seen = 0
  let cursor: string | undefined
  for (;;) {
    const page = await listSummaries({ status: 'running', limit: 100, cursor })
    for (const { runId } of page.runs) {
      if (!stored && seen >= UNDEADLINED_RUNS) break
      const fold = await readFold(runId)
      if (seen < UNDEADLINED_RUNS) undeadlined.push(...undeadlinedAttempts(runId, fold))
      // Named as soon as the newest 1,000 are seen, not after the whole pass.
      if (++seen === UNDEADLINED_RUNS) warnUndeadlinedAttempts(ctx, undeadlined)
      if (stored && restore && (await lacksTasks(stored, runId, fold))) {
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
    }
    if (page.nextCursor === null || (!stored && seen >= UNDEADLINED_RUNS)) break
    cursor = page.nextCursor
  }
  if (seen < UNDEADLINED_RUNS) warnUndeadlinedAttempts(ctx, undeadlined)
  if (restored.length > 0) {
    ctx.log.warn(
      { runs: restored.length, first: restored.slice(0, 10) },
      `${restored.length} run(s) had a worker attempt recorded dispatched whose task was never stored (a host was killed in between): their tasks are stored again`,
    )
  }
  return restored
}

/** Whether the run has a dispatched attempt whose task the store lacks. */
async function lacksTasks(stored: WorkerTaskStore, runId: string, fold: RunFold): Promise<boolean> {
  const dispatched = dispatchedTasks(fold)
  if (dispatched.length === 0) return false
  const present = new Set((await stored.list(runId)).map((s) => keyOf(s.task)))
  return !dispatched.every((task) => present.has(keyOf(task)))
}
