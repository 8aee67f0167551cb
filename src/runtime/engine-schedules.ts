import type { Claim, ClaimStore, ScheduleStore } from '../core/ports.js'
import type { EngineContext } from './context.js'
import type { RuntimeEngine } from './engine.js'
import type { EngineSchedules, ScheduleTickerOptions } from './schedule-api.js'
import { ScheduleService } from './schedule-service.js'
import type { ScheduleDefinition } from './schedule-spec.js'
import { ScheduleTicker, type TickerClaim } from './schedule-ticker.js'
import { Ticks } from './schedule-ticks.js'
import type { StartedTick } from './tick-runner.js'

/** The schedules part of one engine: the service and its ticker. */
export interface Schedules {
  service: ScheduleService
  ticker: ScheduleTicker | undefined
  stop(): Promise<void>
}

const positive = (name: string, value: number | undefined, fallback: number): number => {
  const v = value ?? fallback
  if (!Number.isFinite(v) || v <= 0) {
    throw new TypeError(
      `createEngine: scheduleOptions.${name} must be a positive number, got ${value}`,
    )
  }
  return v
}

/** Checks `scheduleOptions` (at creation: a bad option is the caller's code). */
export function resolveTickerOptions(options: ScheduleTickerOptions = {}) {
  return {
    pollMs: positive('pollMs', options.pollMs, 1000),
    leaseMs: positive('leaseMs', options.leaseMs, 10_000),
    graceMs: positive('graceMs', options.graceMs, 30_000),
    disabled: options.disabled === true,
  }
}

/** The store has no claims (a custom store): this process alone ticks. */
const alwaysHeld: TickerClaim = { hold: async () => 1, release: async () => {} }

/** The name of the claim the ticker works under (one per store). */
export const SCHEDULES_CLAIM = 'schedules'

/**
 * The ticker's claim through the store's claim port (`EventStore.claims`), asked at every pass
 * but written only when a third of the lease has passed since the last write (as
 * `ClaimedTasks` renews): passes come every second or more often, and on SQLite each claim
 * write is an fsync. Let go on stop.
 */
export function storeClaim(
  claims: ClaimStore | undefined,
  owner: string,
  leaseMs: number,
): TickerClaim {
  if (!claims) return alwaysHeld
  let held: Claim | null = null
  let renewedAt = 0
  return {
    async hold(now) {
      if (held && now < held.expiresAt && now - renewedAt < leaseMs / 3) return held.epoch
      held = await claims.claim(SCHEDULES_CLAIM, owner, now, now + leaseMs)
      renewedAt = now
      return held?.epoch ?? null
    },
    async release() {
      if (held) await claims.release(SCHEDULES_CLAIM, owner, held.epoch)
      held = null
    },
  }
}

/**
 * A started tick as an observation (`schedule.tick`): how late its run started against the
 * tick's fire time, measured when the start returned.
 */
function observeTick(ctx: EngineContext, tick: StartedTick): void {
  const { fireAt, ...fields } = tick
  ctx.observe({
    type: 'schedule.tick',
    ...fields,
    latenessMs: Math.max(0, ctx.clock.now() - fireAt),
  })
}

/**
 * Builds the engine's schedules over its runtime and the store's schedule table: the code's
 * schedules registered, and the ticker started.
 */
export async function startSchedules(
  ctx: EngineContext,
  store: ScheduleStore,
  rt: RuntimeEngine,
  definitions: readonly ScheduleDefinition[],
  option: ScheduleTickerOptions | undefined,
  owner: string,
): Promise<Schedules> {
  const options = resolveTickerOptions(option)
  const claim = storeClaim(ctx.store.claims, owner, options.leaseMs)
  const ticks = new Ticks()
  let ticker: ScheduleTicker | undefined
  const host = {
    startRun: (args: Parameters<RuntimeEngine['startRun']>[0]) => rt.startRun(args),
    getRun: (runId: string) => rt.getRun(runId),
    cancel: (runId: string) => rt.cancel(runId),
    log: ctx.log,
    started: ctx.observing ? (tick: StartedTick) => observeTick(ctx, tick) : undefined,
  }
  const service = new ScheduleService(
    store,
    ctx.registry,
    ticks,
    ctx.clock,
    host,
    options.pollMs,
    () => ticker?.kick(),
  )
  await service.syncCode(definitions)
  if (!options.disabled) {
    ticker = new ScheduleTicker(
      store,
      service.tickHost,
      ticks,
      claim,
      ctx.clock,
      { pollMs: options.pollMs, graceMs: options.graceMs, batch: 256, concurrency: 16 },
      ctx.log,
    )
    ticker.start()
  }
  return { service, ticker, stop: async () => ticker?.stop() }
}

export type { EngineSchedules, ScheduleTickerOptions }
