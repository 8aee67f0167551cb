import type { QueueInfo } from '../core/api-types.js'
import type { EffectDefinition } from '../core/effect.js'
import { CompositionError } from '../core/errors.js'
import { effectFlowProblem, effectFlowQueue, flowKey } from '../core/flow.js'
import type { Claim, ClaimStore } from '../core/ports.js'
import type {
  EffectAdmissions,
  EffectDenial,
  EffectLimitSpec,
  EffectPermit,
  EngineContext,
} from './context.js'
import { errorFields } from './logger.js'

/** How often waiting attempts look for a slot another process freed (this process's own are told at once). */
const POLL_MS = 50

interface Waiter {
  holder: string
  spec: EffectLimitSpec
  granted(permit: EffectPermit): void
  cancelled: boolean
}

interface Group {
  waiters: Waiter[]
  running: boolean
  again: boolean
  timer: unknown
}

const SLOT = 'effect-slot:'
const RATE = 'effect-rate:'
const slotPrefix = (queue: string, key: string) => `${SLOT}${JSON.stringify([queue, key])}#`
const ratePrefix = (queue: string, key: string) => `${RATE}${JSON.stringify([queue, key])}#`

/**
 * Flow control of effects' attempts (docs/flow-control.md, "Effects"), counted in the store's
 * named claims, so the limits hold for every process sharing the store: a concurrency slot is
 * one of `limit` claims `effect-slot:[queue,key]#i`, held by the attempt (its owner is the
 * attempt) until it ends, renewed while it runs, lapsing with the run lease's time when its
 * process died; a rate token is one of `limit` claims `effect-rate:[queue,key]#i`, taken for
 * `periodMs` and never let go, so no window of `periodMs` starts more than `limit` attempts.
 * Each take is one atomic claim; nothing is a per-process counter. Attempts that find no slot
 * wait here, in order per key: a slot freed in this process goes to its next waiter at once,
 * one freed elsewhere is found by a poll every POLL_MS.
 */
export class EffectLimits implements EffectAdmissions {
  private readonly groups = new Map<string, Group>()
  /** Slots held by attempts running here, renewed until they end. */
  private readonly held = new Map<string, EffectPermit>()
  private renewTimer: unknown
  private stopped = false
  /** When each waiting attempt started to wait (for `queues()`). */
  private readonly since = new Map<string, number>()

  constructor(
    private readonly ctx: EngineContext,
    private readonly claims: ClaimStore,
  ) {}

  /** None unless an effect declares limits; a store without claims then refuses them. */
  static create(ctx: EngineContext): EffectLimits | undefined {
    const limited = [...ctx.registry.effects].find(([, e]) => e.concurrency || e.rate)
    if (!ctx.store.claims) {
      if (!limited) return undefined
      throw new CompositionError(
        `effect ${limited[0]} declares concurrency or rate, and the store has no claims (memoryStore, sqliteStore and postgresStore have)`,
        { effect: limited[0] },
      )
    }
    return new EffectLimits(ctx, ctx.store.claims)
  }

  /** How long a slot outlives a process that died holding it: the run lease's time. */
  private get leaseMs(): number {
    return this.ctx.ownership?.leaseMs ?? 30_000
  }

  /** Whether attempts of `definition` need admission. */
  limited(definition: EffectDefinition | undefined): definition is EffectDefinition {
    return definition !== undefined && (!!definition.concurrency || !!definition.rate)
  }

  /**
   * What an attempt of `definition` (registered as `type`) with `input` needs. A key function
   * that throws or answers something else than a non-empty string throws INVALID_INPUT (the
   * attempt fails, terminally).
   */
  specOf(definition: EffectDefinition, type: string, input: unknown): EffectLimitSpec {
    const problem = effectFlowProblem(definition)
    if (problem) throw new CompositionError(`effect ${type}: ${problem}`, { effect: type })
    const queue = effectFlowQueue(type)
    const { concurrency, rate } = definition
    const label = `effect ${type}`
    return {
      queue,
      concurrency: concurrency && {
        key: flowKey(label, concurrency.key, input),
        limit: concurrency.limit,
      },
      rate: rate && {
        key: flowKey(label, rate.key, input),
        limit: rate.limit,
        periodMs: rate.periodMs,
      },
    }
  }

  /** Whether attempts of this spec already wait here (a newcomer queues behind them). */
  hasWaiters(spec: EffectLimitSpec): boolean {
    return (this.groups.get(groupId(spec))?.waiters.length ?? 0) > 0
  }

  /**
   * One try for a slot (and a rate token): the permit, or why not. Atomic per claim; a slot
   * taken and then refused a rate token is let go at once.
   */
  async acquire(spec: EffectLimitSpec, holder: string): Promise<EffectPermit | EffectDenial> {
    const now = this.ctx.clock.now()
    let slot: Claim | null = null
    if (spec.concurrency) {
      const { key, limit } = spec.concurrency
      slot = await this.take(slotPrefix(spec.queue, key), limit, holder, now, now + this.leaseMs)
      if (!slot) return { reason: 'concurrency', limit, key }
    }
    if (spec.rate) {
      const { key, limit, periodMs } = spec.rate
      const prefix = ratePrefix(spec.queue, key)
      const token = await this.take(prefix, limit, holder, now, now + periodMs)
      if (!token) {
        if (slot) await this.claims.release(slot.name, holder, slot.epoch)
        const live = (await this.claims.list(prefix)).filter((c) => c.expiresAt > now)
        const retryAt = Math.min(...live.map((c) => c.expiresAt))
        return { reason: 'rate', limit, key, retryAt: Number.isFinite(retryAt) ? retryAt : now }
      }
    }
    const permit = { spec, holder, slot }
    if (slot) this.hold(permit)
    return permit
  }

  /** One free claim of `limit` under `prefix` for `holder` (its own live one if it has it). */
  private async take(
    prefix: string,
    limit: number,
    holder: string,
    now: number,
    expiresAt: number,
  ): Promise<Claim | null> {
    const live = (await this.claims.list(prefix)).filter((c) => c.expiresAt > now)
    const own = live.find((c) => c.owner === holder)
    if (own) return own
    if (live.length >= limit) return null
    const taken = new Set(live.map((c) => c.name))
    const free: string[] = []
    for (let i = 0; i < limit; i++) if (!taken.has(`${prefix}${i}`)) free.push(`${prefix}${i}`)
    // From a random place: processes racing for the free claims mostly ask for different ones.
    const from = Math.floor(Math.random() * free.length)
    for (let i = 0; i < free.length; i++) {
      const name = free[(from + i) % free.length]
      const claim = await this.claims.claim(name, holder, now, expiresAt)
      if (claim) return claim
    }
    return null
  }

  /**
   * Waits for a permit, behind this process's earlier waiters of the same keys; `granted` is
   * called with it (never after `cancel`). Returns the cancel.
   */
  wait(spec: EffectLimitSpec, holder: string, granted: (permit: EffectPermit) => void): () => void {
    const id = groupId(spec)
    let group = this.groups.get(id)
    if (!group) {
      group = { waiters: [], running: false, again: false, timer: undefined }
      this.groups.set(id, group)
    }
    const waiter: Waiter = { holder, spec, granted, cancelled: false }
    group.waiters.push(waiter)
    if (!this.since.has(holder)) this.since.set(holder, this.ctx.clock.now())
    this.pump(id, group)
    return () => {
      waiter.cancelled = true
      this.since.delete(holder)
    }
  }

  /** Grants what the keys allow to the group's waiters, in order; polls again if any remain. */
  private pump(id: string, group: Group): void {
    if (this.stopped) return
    if (group.running) {
      group.again = true
      return
    }
    group.running = true
    if (group.timer !== undefined) this.ctx.clock.clearTimeout(group.timer)
    group.timer = undefined
    void (async () => {
      let nextAt = this.ctx.clock.now() + POLL_MS
      try {
        do {
          group.again = false
          while (group.waiters.length > 0 && !this.stopped) {
            const waiter = group.waiters[0]
            if (waiter.cancelled) {
              group.waiters.shift()
              continue
            }
            const result = await this.acquire(waiter.spec, waiter.holder)
            if (!('holder' in result)) {
              if (result.retryAt !== undefined) nextAt = Math.max(result.retryAt, nextAt - POLL_MS)
              break
            }
            group.waiters.shift()
            this.since.delete(waiter.holder)
            if (waiter.cancelled) this.release(result)
            else waiter.granted(result)
          }
        } while (group.again && !this.stopped)
      } catch (error) {
        this.ctx.log.error({ ...errorFields(error) }, 'effect flow control: a slot poll failed')
      } finally {
        group.running = false
        if (group.waiters.length === 0) this.groups.delete(id)
        else if (!this.stopped) {
          const delay = Math.max(0, nextAt - this.ctx.clock.now())
          group.timer = this.ctx.clock.setTimeout(() => this.pump(id, group), delay)
        }
      }
    })()
  }

  private hold(permit: EffectPermit): void {
    this.held.set(permit.holder, permit)
    if (this.renewTimer === undefined && !this.stopped) this.armRenewal()
  }

  private armRenewal(): void {
    const every = Math.max(1, Math.floor(this.leaseMs / 3))
    this.renewTimer = this.ctx.clock.setTimeout(() => {
      this.renewTimer = undefined
      void this.renew().finally(() => {
        if (this.held.size > 0 && !this.stopped) this.armRenewal()
      })
    }, every)
  }

  /** Slots of attempts still running here live on; one a lapse let another take is dropped. */
  private async renew(): Promise<void> {
    const now = this.ctx.clock.now()
    for (const permit of [...this.held.values()]) {
      const slot = permit.slot
      if (!slot) continue
      try {
        const renewed = await this.claims.claim(slot.name, permit.holder, now, now + this.leaseMs)
        if (renewed) permit.slot = renewed
        else {
          this.held.delete(permit.holder)
          this.ctx.log.warn(
            { slot: slot.name, holder: permit.holder },
            'effect flow control: a running attempt lost its slot (it lapsed before renewal)',
          )
        }
      } catch (error) {
        this.ctx.log.error({ ...errorFields(error) }, 'effect flow control: renewal failed')
      }
    }
  }

  /**
   * The attempt ended (or never started): its slot is let go and this process's next waiter of
   * the key asks at once. Never throws.
   */
  release(permit: EffectPermit): void {
    this.held.delete(permit.holder)
    const slot = permit.slot
    if (!slot) return
    void this.claims
      .release(slot.name, permit.holder, slot.epoch)
      .catch((error) => {
        this.ctx.log.error({ ...errorFields(error) }, 'effect flow control: release failed')
      })
      .finally(() => {
        for (const [id, group] of this.groups) {
          if (group.waiters[0]?.spec.queue === permit.spec.queue) this.pump(id, group)
        }
      })
  }

  /** Every effect key with a slot held or an attempt waiting in this process (`queues()`). */
  async keys(): Promise<QueueInfo[]> {
    const now = this.ctx.clock.now()
    const out = new Map<string, QueueInfo>()
    const entry = (queue: string, key: string, limit: number) => {
      const id = JSON.stringify([queue, key])
      let state = out.get(id)
      if (!state) {
        const rate = this.ctx.registry.effects.get(queue.slice('effect:'.length))?.rate
        state = {
          ...{ queue, key, limit, active: 0, queued: 0, oldestWaitMs: null },
          ...{ rate: rate ? { limit: rate.limit, periodMs: rate.periodMs } : null },
          ...{ admittedLastMinute: null, singleton: null },
        }
        out.set(id, state)
      }
      return state
    }
    for (const claim of await this.claims.list(SLOT)) {
      if (claim.expiresAt <= now) continue
      const [queue, key] = JSON.parse(claim.name.slice(SLOT.length, claim.name.lastIndexOf('#')))
      const limit = this.limitOf(queue)
      if (limit !== null) entry(queue, key, limit).active++
    }
    for (const group of this.groups.values()) {
      for (const waiter of group.waiters) {
        const c = waiter.spec.concurrency
        if (waiter.cancelled || !c) continue
        const state = entry(waiter.spec.queue, c.key, c.limit)
        state.queued++
        const waited = now - (this.since.get(waiter.holder) ?? now)
        state.oldestWaitMs = Math.max(state.oldestWaitMs ?? 0, waited)
      }
    }
    return [...out.values()].sort((a, b) => cmp(a.queue, b.queue) || cmp(a.key, b.key))
  }

  private limitOf(queue: string): number | null {
    const type = queue.slice('effect:'.length)
    return this.ctx.registry.effects.get(type)?.concurrency?.limit ?? null
  }

  stop(): void {
    this.stopped = true
    if (this.renewTimer !== undefined) this.ctx.clock.clearTimeout(this.renewTimer)
    for (const group of this.groups.values()) {
      if (group.timer !== undefined) this.ctx.clock.clearTimeout(group.timer)
    }
    this.groups.clear()
  }
}

const groupId = (spec: EffectLimitSpec): string =>
  JSON.stringify([spec.queue, spec.concurrency?.key ?? null, spec.rate?.key ?? null])

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
