import { nextDeadline } from '../core/deadlines.js'
import type { RunFold } from '../core/fold/index.js'
import type { EngineContext } from './context.js'

/** How many runs got a deadline scheduled, and how many of those were due already. */
export type Scheduled = { scheduled: number; dueNow: number }

/**
 * Schedules every run's durable deadline from the store's run index (at boot, and for
 * `rescanTimers`): due timers and retries fire, and attempts a dead process left started (due
 * at once) run again, with no call needed. Stores without the index are folded run by run.
 */
export async function scheduleStoredDeadlines(
  ctx: EngineContext,
  readFold: (runId: string) => Promise<RunFold>,
): Promise<Scheduled> {
  const store = ctx.store
  if (!ctx.capabilities.deadlines) return scheduleFoldedDeadlines(ctx, readFold)
  const now = ctx.clock.now()
  let scheduled = 0
  let dueNow = 0
  for (const { runId, nextDeadlineAt } of await store.listRunsWithDeadlines!()) {
    ctx.scheduler.schedule(runId, nextDeadlineAt)
    scheduled++
    if (nextDeadlineAt <= now) dueNow++
  }
  return { scheduled, dueNow }
}

/** Rebuilds every deadline by folding every run (after restoring storage). */
export async function scheduleFoldedDeadlines(
  ctx: EngineContext,
  readFold: (runId: string) => Promise<RunFold>,
): Promise<Scheduled> {
  const now = ctx.clock.now()
  let scheduled = 0
  let dueNow = 0
  for (const runId of await ctx.store.listRuns()) {
    // Finished runs can still hold a deadline (a worker's reply to a cancel request).
    const at = nextDeadline(await readFold(runId), true)
    if (at === null) continue
    ctx.scheduler.schedule(runId, at)
    scheduled++
    if (at <= now) dueNow++
  }
  return { scheduled, dueNow }
}
