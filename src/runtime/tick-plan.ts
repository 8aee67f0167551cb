import type { ScheduleSpec } from './schedule-spec.js'
import type { StartReason } from './schedule-state.js'
import { fireTime, type Ticks } from './schedule-ticks.js'

/** What one look at a due schedule decides about its ticks. */
export interface TickPlan {
  /** The ticks to start, oldest first. */
  start: Array<{ tick: number; reason: StartReason }>
  /** Ticks that fell due in an outage and that `catchUp` leaves out. */
  missed: number
  /** The first tick not due yet (fires after `now`), null when the rule never fires again. */
  nextTick: number | null
}

/** Due ticks beyond this many, even with a ticker alive, count as an outage's. */
const MAX_ON_TIME = 1000

/**
 * The ticks of one schedule due by `now`, from its `nextTick` on (docs/schedules.md, "Missed
 * ticks"). A tick at or before `attendedUntil` fell due while a ticker was alive: it is late at
 * most by a failover, and starts whatever the policy. Later ones fell due in an outage (no host
 * ticking for longer than the grace): `catchUp` decides — `all` starts them (the latest
 * `maxCatchUp`), `latest` the last one, `none` none.
 */
export function planTicks(
  ticks: Ticks,
  spec: ScheduleSpec,
  nextTick: number | null,
  now: number,
  attendedUntil: number,
): TickPlan {
  const plan: TickPlan = { start: [], missed: 0, nextTick }
  let at = nextTick
  while (at !== null && at <= attendedUntil && fireTime(spec, at) <= now) {
    if (plan.start.length === MAX_ON_TIME) break
    plan.start.push({ tick: at, reason: 'tick' })
    at = ticks.next(spec, at)
  }
  if (at === null || fireTime(spec, at) > now) {
    plan.nextTick = at
    return plan
  }
  // The rest fell due in an outage: the ticks in [at, now] whose fire time has come.
  const limit = spec.catchUp === 'all' ? spec.maxCatchUp : 1
  const { ticks: latest, skipped } = ticks.between(spec, at - 1, now, limit + 1)
  let missed = skipped
  const due = latest.filter((t) => fireTime(spec, t) <= now)
  const notYet = latest.find((t) => fireTime(spec, t) > now)
  while (due.length > (spec.catchUp === 'none' ? 0 : limit)) {
    due.shift()
    missed++
  }
  for (const tick of due) plan.start.push({ tick, reason: 'catch-up' })
  plan.missed = missed
  const last = latest.length > 0 ? (latest[latest.length - 1] as number) : at
  plan.nextTick = notYet ?? ticks.next(spec, Math.max(last, now))
  return plan
}
