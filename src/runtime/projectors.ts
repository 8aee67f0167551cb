import type { EventEnvelope } from '../core/envelope.js'
import type { Clock, FeedEntry, ProjectionFeed } from '../core/ports.js'
import type { ProjectorDefinition } from '../core/projector.js'
import type { ProjectorOptions, ProjectorState, ProjectorStatus } from '../core/projector-status.js'
import { feedCache } from './feed-cache.js'
import type { Observation } from './options.js'

interface Worked {
  definition: ProjectorDefinition
  state: ProjectorState
  active: boolean
  position: number
  failures: number
  lastError: ProjectorStatus['lastError']
  updatedAt: number
}

interface RunnerDeps {
  feed: ProjectionFeed
  clock: Clock
  observe(observation: Omit<Observation, 'at'>): void
  /** Whether anyone observes (lag observations cost a read of the head). */
  observing: boolean
  owner: string
}

const STOP_WAIT_MS = 5_000

const DEFAULTS = { leaseMs: 15_000, pollMs: 500, delayMs: 20, batchSize: 500, failAfter: 5 }

/** The delay before retry `failures` (1, 2, …): doubling from `initialMs`, capped at `maxMs`. */
export function projectorBackoff(failures: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.min(30, Math.max(0, failures - 1)))
}

/**
 * Works every projector of an engine off the commit path: per projector a loop that claims it
 * in the store, reads committed events after its checkpoint, hands them over grouped by run in
 * seq order, then moves the checkpoint. Runs never wait for it; a failing projector retries
 * its batch with capped backoff and holds only itself back.
 */
export class ProjectorRunner {
  private readonly worked: Worked[]
  private readonly abort = new AbortController()
  private stopped = false
  private loops: Promise<void>[] = []
  private readonly sleepers = new Set<() => void>()
  private unwatch: (() => void) | undefined
  private readonly opts: Required<Omit<ProjectorOptions, 'owner' | 'backoff'>> & {
    initialMs: number
    maxMs: number
  }

  constructor(
    projectors: readonly ProjectorDefinition[],
    private readonly deps: RunnerDeps,
    options: ProjectorOptions = {},
  ) {
    const seen = new Set<string>()
    for (const p of projectors) {
      if (seen.has(p.name)) throw new TypeError(`createEngine: two projectors are named ${p.name}`)
      seen.add(p.name)
    }
    this.worked = projectors.map((definition) => ({
      definition,
      state: 'running',
      active: false,
      position: 0,
      failures: 0,
      lastError: null,
      updatedAt: 0,
    }))
    this.reads = feedCache(deps.feed)
    this.opts = {
      leaseMs: positive('leaseMs', options.leaseMs, DEFAULTS.leaseMs),
      pollMs: positive('pollMs', options.pollMs, DEFAULTS.pollMs),
      delayMs: nonNegative('delayMs', options.delayMs, DEFAULTS.delayMs),
      batchSize: positive('batchSize', options.batchSize, DEFAULTS.batchSize),
      failAfter: positive('failAfter', options.failAfter, DEFAULTS.failAfter),
      initialMs: positive('backoff.initialMs', options.backoff?.initialMs, 100),
      maxMs: positive('backoff.maxMs', options.backoff?.maxMs, 30_000),
    }
  }

  get names(): string[] {
    return this.worked.map((w) => w.definition.name)
  }

  start(): void {
    if (this.worked.length === 0) return
    this.unwatch = this.deps.feed.watch(() => this.poke())
    this.loops = this.worked.map((w) => this.loop(w))
  }

  /** Stops every loop, lets in-flight handlers see the abort, and releases the claims. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.abort.abort()
    this.unwatch?.()
    this.poke()
    // A handler that ignores the abort signal is not waited for past STOP_WAIT_MS: its round
    // is not checkpointed and comes again after the restart.
    let timer: unknown
    await Promise.race([
      Promise.allSettled(this.loops),
      new Promise<void>((resolve) => {
        timer = this.deps.clock.setTimeout(resolve, STOP_WAIT_MS)
      }),
    ])
    this.deps.clock.clearTimeout(timer)
    for (const w of this.worked) {
      w.state = 'stopped'
      if (w.active) await this.deps.feed.release(w.definition.name, this.deps.owner).catch(() => {})
      w.active = false
    }
  }

  /** Every projector's status, lag read from the store now. */
  async status(): Promise<ProjectorStatus[]> {
    if (this.worked.length === 0) return []
    const feed = this.deps.feed
    const head = await feed.headPosition()
    const now = this.deps.clock.now()
    const out: ProjectorStatus[] = []
    for (const w of this.worked) {
      const stored = await feed.checkpoint(w.definition.name)
      const position = Math.max(w.position, stored?.position ?? 0)
      let lagMs = 0
      if (head > position) {
        const [next] = await feed.readAfter(position, 1)
        if (next) lagMs = Math.max(0, now - next.event.ts)
      }
      out.push({
        name: w.definition.name,
        state: w.state,
        active: w.active,
        owner: stored?.owner && stored.expiresAt > now ? stored.owner : null,
        position,
        headPosition: head,
        lagEvents: Math.max(0, head - position),
        lagMs,
        failures: w.failures,
        lastError: w.lastError,
        updatedAt: Math.max(w.updatedAt, stored?.updatedAt ?? 0),
      })
    }
    return out
  }

  /** The run's seq every named projector has checkpointed (trim coverage). */
  async coveredSeq(runId: string, names: readonly string[]): Promise<number> {
    let covered = Number.POSITIVE_INFINITY
    for (const name of names) {
      const stored = await this.deps.feed.checkpoint(name)
      if (!stored || stored.position === 0) return 0
      covered = Math.min(covered, await this.deps.feed.coveredSeq(runId, stored.position))
      if (covered === 0) return 0
    }
    return Number.isFinite(covered) ? covered : 0
  }

  private poke(): void {
    const sleepers = [...this.sleepers]
    this.sleepers.clear()
    for (const wake of sleepers) wake()
  }

  /** Waits `ms` on the engine clock; `wakeOnCommit` also ends the wait at the next commit. */
  private sleep(ms: number, wakeOnCommit: boolean): Promise<void> {
    if (this.stopped) return Promise.resolve()
    return new Promise<void>((resolve) => {
      let done = false
      const finish = () => {
        if (done) return
        done = true
        this.deps.clock.clearTimeout(timer)
        this.sleepers.delete(finish)
        this.stopSleepers.delete(finish)
        resolve()
      }
      const timer = this.deps.clock.setTimeout(finish, ms)
      if (wakeOnCommit) this.sleepers.add(finish)
      this.stopSleepers.add(finish)
    })
  }

  private readonly stopSleepers = new Set<() => void>()
  private readonly reads: ReturnType<typeof feedCache>

  private async loop(w: Worked): Promise<void> {
    const { feed, clock, owner } = this.deps
    const name = w.definition.name
    let renewAt = 0
    this.abort.signal.addEventListener('abort', () => {
      for (const wake of [...this.stopSleepers]) wake()
    })
    while (!this.stopped) {
      try {
        if (!w.active || clock.now() >= renewAt) {
          const now = clock.now()
          const claimed = await feed.claim(name, owner, now, now + this.opts.leaseMs)
          if (!claimed) {
            w.active = false
            await this.sleep(this.opts.pollMs, false)
            continue
          }
          // We save after every page, so while we hold it the stored position is ours.
          w.position = claimed.position
          w.active = true
          renewAt = now + this.opts.leaseMs / 3
        }
        const page = await this.reads.readAfter(w.position, this.opts.batchSize)
        if (page.length === 0) {
          // Caught up with the store answering again: a run of store failures is over.
          if (w.failures > 0) this.succeeded(w, '')
          await this.sleep(this.opts.pollMs, true)
          // Woken by a commit (or the poll): let more commits land before the next round.
          if (this.opts.delayMs > 0) await this.sleep(this.opts.delayMs, false)
          continue
        }
        const delivered = await this.deliver(w, page)
        if (!delivered) continue
        const last = page[page.length - 1].position
        const now = clock.now()
        if (!(await feed.saveCheckpoint(name, owner, last, now))) {
          // Another process took the claim (ours lapsed): it redoes this page.
          w.active = false
          continue
        }
        w.position = last
        w.updatedAt = now
        if (this.deps.observing) {
          const head = await feed.headPosition()
          this.deps.observe({
            type: 'projector.lag',
            runId: '',
            projector: name,
            position: last,
            lagEvents: Math.max(0, head - last),
            // The oldest event of the page waited this long for the projector.
            lagMs: Math.max(0, now - page[0].event.ts),
          })
        }
      } catch (error) {
        // The store failed (claim, read or save): count it like a handler failure.
        await this.failed(w, error, null, 0)
      }
    }
  }

  /**
   * Hands a page to the projector, one batch per run in order of first appearance (a run's
   * events keep their seq order). A batch that throws is retried with backoff; runs already
   * handled in this page are not handed over again. False if the projector stopped or lost
   * its claim meanwhile (the page is read again).
   */
  private async deliver(w: Worked, page: readonly FeedEntry[]): Promise<boolean> {
    const byRun = new Map<string, EventEnvelope[]>()
    for (const { event } of page) {
      const events = byRun.get(event.runId)
      if (events) events.push(event)
      else byRun.set(event.runId, [event])
    }
    for (const [runId, events] of byRun) {
      let attempt = 1
      for (;;) {
        if (this.stopped) return false
        try {
          await w.definition.handle(
            { runId, events },
            { projector: w.definition.name, attempt, signal: this.abort.signal },
          )
          if (w.failures > 0) this.succeeded(w, runId)
          break
        } catch (error) {
          await this.failed(w, error, runId, attempt)
          attempt++
          if (!(await this.renew(w))) return false
        }
      }
    }
    if (w.definition.flush) {
      if (this.stopped) return false
      try {
        await w.definition.flush({
          projector: w.definition.name,
          attempt: 1,
          signal: this.abort.signal,
        })
      } catch (error) {
        // What the round buffered is lost: the page is read and handed over again.
        await this.failed(w, error, null, 1)
        await this.renew(w)
        return false
      }
    }
    return true
  }

  private succeeded(w: Worked, runId: string): void {
    w.failures = 0
    if (w.state !== 'failing') return
    w.state = 'running'
    this.deps.observe({ type: 'projector.recovered', runId, projector: w.definition.name })
  }

  private async renew(w: Worked): Promise<boolean> {
    if (this.stopped) return false
    const now = this.deps.clock.now()
    try {
      const claimed = await this.deps.feed.claim(
        w.definition.name,
        this.deps.owner,
        now,
        now + this.opts.leaseMs,
      )
      if (claimed && claimed.position === w.position) return true
    } catch {}
    w.active = false
    return false
  }

  private async failed(w: Worked, error: unknown, runId: string | null, attempt: number) {
    if (this.stopped) return
    w.failures++
    const message = error instanceof Error ? error.message : String(error)
    w.lastError = { message, runId, at: this.deps.clock.now(), attempt }
    if (w.failures >= this.opts.failAfter) w.state = 'failing'
    this.deps.observe({
      type: 'projector.failed',
      runId: runId ?? '',
      projector: w.definition.name,
      attempt,
      failures: w.failures,
      state: w.state,
      error: message,
    })
    await this.sleep(projectorBackoff(w.failures, this.opts.initialMs, this.opts.maxMs), false)
  }
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
    throw new TypeError(
      `createEngine: projectorOptions.${name} must be a number >= 0, got ${value}`,
    )
  }
  return v
}

function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new TypeError(`createEngine: projectorOptions.${name} must be a number > 0, got ${value}`)
  }
  return v
}
