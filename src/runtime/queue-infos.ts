import type { QueueInfo } from '../core/api-types.js'
import type { EngineContext } from './context.js'
import { UNLIMITED_FLOW } from './flow-admission.js'

/**
 * Every flow-control key with a queued or admitted run, and every effect key with attempts in
 * flight (docs/flow-control.md).
 */
export async function queueInfos(ctx: EngineContext): Promise<QueueInfo[]> {
  const flow = ctx.flow
  const effects = (await ctx.effectLimits?.keys()) ?? []
  if (!flow) return effects
  const now = ctx.clock.now()
  const runs = (await flow.store.keys(now - 60_000)).map((k): QueueInfo => {
    const limit = flow.limitOf(k.queue)
    const controls = ctx.registry.flowOf(k.queue)
    const rate = controls?.rate
      ? { limit: controls.rate.limit, periodMs: controls.rate.periodMs }
      : null
    return {
      queue: k.queue,
      key: k.key,
      limit: limit === UNLIMITED_FLOW ? null : limit,
      active: k.active,
      queued: k.queued,
      oldestWaitMs: k.oldestQueuedAt === null ? null : Math.max(0, now - k.oldestQueuedAt),
      rate,
      admittedLastMinute: rate ? k.recentAdmissions : null,
      singleton: controls?.singleton?.mode ?? null,
    }
  })
  return [...runs, ...effects]
}
