import type { EventEnvelope } from '../core/envelope.js'
import type { PayloadCodec } from '../core/payload-codec.js'
import type { ClaimStore, Clock, FeedEntry, ProjectionFeed } from '../core/ports.js'
import { type ProjectorDefinition, projectorClaimName } from '../core/projector.js'
import type { ProjectorOptions, ProjectorState, ProjectorStatus } from '../core/projector-status.js'
import { backoffAfter } from '../core/retry.js'
import { feedCache } from './feed-cache.js'
import type { Observation } from './options.js'
import type { ClaimedRound, ClaimedTask, ClaimedTasks } from './ownership/claimed-task.js'

interface Worked {
  definition: ProjectorDefinition
  state: ProjectorState
  /** Its claimed task while the runner runs. */
  task: ClaimedTask | undefined
  /** The claim epoch `position` was read or saved under (null: read it again). */
  epoch: number | null
  position: number
  failures: number
  lastError: ProjectorStatus['lastError']
  updatedAt: number
}

interface RunnerDeps {
  feed: ProjectionFeed
  /** The store's claims: who works each projector (`projector:<name>`). */
  claims: ClaimStore | undefined
  /** The engine's claimed tasks: one per projector, stopped with the engine. */
  tasks: ClaimedTasks
  clock: Clock
  observe(observation: Omit<Observation, 'at'>): void
  /** Whether anyone observes (lag observations cost a read of the head). */
  observing: boolean
  owner: string
  /** Handed to each projector in its context (`ProjectorContext.codec`). */
  codec?: PayloadCodec
}

const DEFAULTS = { leaseMs: 15_000, pollMs: 500, delayMs: 20, batchSize: 500, failAfter: 5 }

/**
 * Works every projector of an engine off the commit path: per projector a claimed task
 * (ownership/claimed-task.ts, claim `projector:<name>`) whose rounds read committed events after
 * the checkpoint, hand them over grouped by run in seq order, then move the checkpoint, until
 * caught up. Runs never wait for it; a failing projector retries its batch with capped backoff
 * and holds only itself back.
 */
export class ProjectorRunner {
  private readonly worked: Worked[]
  private stopped = false
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
      task: undefined,
      epoch: null,
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
    // A commit wakes the projectors this process works, `delayMs` later (others poll).
    this.unwatch = this.deps.feed.watch(() => {
      for (const w of this.worked) if (w.task?.holding) w.task.kick(this.opts.delayMs)
    })
    for (const w of this.worked) {
      w.task = this.deps.tasks.start({
        name: projectorClaimName(w.definition.name),
        owner: this.deps.owner,
        intervalMs: this.opts.pollMs,
        leaseMs: this.opts.leaseMs,
        work: (round) => this.round(w, round),
      })
    }
  }

  /** Stops every projector's task: in-flight handlers see the abort, the claims are let go. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.unwatch?.()
    await Promise.allSettled(this.worked.map((w) => w.task?.stop()))
    for (const w of this.worked) w.state = 'stopped'
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
      const claim = await this.deps.claims?.read(projectorClaimName(w.definition.name))
      const position = Math.max(w.position, stored?.position ?? 0)
      let lagMs = 0
      if (head > position) {
        const [next] = await feed.readAfter(position, 1)
        if (next) lagMs = Math.max(0, now - next.event.ts)
      }
      out.push({
        name: w.definition.name,
        state: w.state,
        active: w.task?.holding ?? false,
        owner: claim && claim.expiresAt > now ? claim.owner : null,
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

  private readonly reads: ReturnType<typeof feedCache>

  /**
   * One round while this process holds the projector's claim at `epoch`: pages of committed
   * events after the checkpoint, handed over and checkpointed, until caught up (or the claim is
   * lost, or the engine stops). A failure (handler, flush or store) waits out the backoff and
   * the page comes again.
   */
  /** The position of the projector furthest behind among those this process works now. */
  private slowestHeld(): number {
    let slowest = Number.POSITIVE_INFINITY
    for (const w of this.worked) if (w.task?.holding) slowest = Math.min(slowest, w.position)
    return slowest === Number.POSITIVE_INFINITY ? 0 : slowest
  }

  private async round(w: Worked, round: ClaimedRound): Promise<void> {
    const { feed, clock, owner } = this.deps
    const name = w.definition.name
    const { epoch } = round
    while (round.held()) {
      try {
        if (w.epoch !== epoch) {
          // Taken (again): another process may have moved the checkpoint meanwhile.
          w.position = (await feed.checkpoint(name))?.position ?? 0
          w.epoch = epoch
        }
        const page = await this.reads.readAfter(w.position, this.opts.batchSize)
        if (page.length === 0) {
          // Caught up with the store answering again: a run of store failures is over.
          if (w.failures > 0) this.succeeded(w, '')
          return
        }
        if (!(await this.deliver(w, page, round))) continue
        const last = page[page.length - 1].position
        const now = clock.now()
        if (!(await feed.saveCheckpoint(name, owner, epoch, last, now))) {
          // Another process took the claim (ours lapsed): it redoes this page.
          w.epoch = null
          return
        }
        w.position = last
        w.updatedAt = now
        this.reads.forget(this.slowestHeld())
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
        // The store failed (read or save): count it like a handler failure.
        await this.failed(w, error, null, 0, round.signal)
      }
    }
  }

  /**
   * Hands a page to the projector, one batch per run in order of first appearance (a run's
   * events keep their seq order). A batch that throws is retried with backoff; runs already
   * handled in this page are not handed over again. False if the projector stopped or lost
   * its claim meanwhile (the page is read again).
   */
  private async deliver(w: Worked, page: readonly FeedEntry[], round: ClaimedRound) {
    const byRun = new Map<string, EventEnvelope[]>()
    for (const { event } of page) {
      const events = byRun.get(event.runId)
      if (events) events.push(event)
      else byRun.set(event.runId, [event])
    }
    for (const [runId, events] of byRun) {
      let attempt = 1
      for (;;) {
        if (!round.held()) return false
        try {
          await w.definition.handle(
            { runId, events },
            { projector: w.definition.name, attempt, signal: round.signal, codec: this.deps.codec },
          )
          if (w.failures > 0) this.succeeded(w, runId)
          break
        } catch (error) {
          await this.failed(w, error, runId, attempt, round.signal)
          attempt++
        }
      }
    }
    if (w.definition.flush) {
      if (!round.held()) return false
      try {
        await w.definition.flush({
          projector: w.definition.name,
          attempt: 1,
          signal: round.signal,
          codec: this.deps.codec,
        })
      } catch (error) {
        // What the round buffered is lost: the page is read and handed over again.
        await this.failed(w, error, null, 1, round.signal)
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

  private async failed(
    w: Worked,
    error: unknown,
    runId: string | null,
    attempt: number,
    signal: AbortSignal,
  ) {
    if (signal.aborted) return
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
    await this.sleep(backoffAfter(w.failures, this.opts), signal)
  }

  /** Waits `ms` on the engine clock, or until `signal` aborts. */
  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const done = () => {
        this.deps.clock.clearTimeout(timer)
        signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = this.deps.clock.setTimeout(done, ms)
      signal.addEventListener('abort', done)
    })
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
