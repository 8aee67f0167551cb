import type { QueueInfo, StartRunArgs } from '../core/api-types.js'
import type { Definition } from '../core/definition.js'
import { CompositionError } from '../core/errors.js'
import { type FlowPlace, flowKey, flowQueue, queueKeyOf } from '../core/flow.js'
import type { Json } from '../core/json.js'
import type {
  AdmitResult,
  AppendAdmission,
  FlowEntry,
  FlowStore,
  OrphanedWindow,
} from '../core/ports.js'
import type { EngineContext, FlowAdmissions, FlowEntered } from './context.js'
import { errorFields } from './logger.js'

/** What a round queues: one start (perhaps a singleton `skip`), or the starts gathered. */
type RoundExtra = { enqueue?: FlowEntry; enqueueAll?: FlowEntry[]; skipIfLive?: boolean }

/** A queue's limit when its default version declares no concurrency: its runs wait for nothing. */
export const UNLIMITED_FLOW = 2 ** 31 - 1

/**
 * Every flow-control key with a queued or admitted run, then the effects' limits
 * (docs/flow-control.md, "Operating the queues"): `engine.queues()`.
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

/** How often the admission sweep looks for waiting runs no round admitted (a missed kick). */
const SWEEP_MS = 1000
/** How long the sweep's claim outlives a process that died holding it. */
const SWEEP_LEASE_MS = 3 * SWEEP_MS
/** An admitted run whose log still says `queued` this long after is woken by the sweep. */
const STALLED_MS = 5000
/** Keys one sweep round looks at. */
const SWEEP_KEYS = 256

/**
 * Flow control's admissions in this engine (docs/flow-control.md). Counting and admitting are
 * the store's (`FlowStore.admit`, atomic for every process on the store); this class decides
 * when to ask: at a start (its own entry queued and, when a slot is free, admitted in the same
 * call), when a run of a key ends (its slot is free: the next one is admitted here, whichever
 * process queued it), and in a sweep every second under the claim `flow:admit` (waiting runs
 * no round reached, admitted runs whose admitter died before starting them, debounce windows
 * whose start died before writing their run's log, and the other entries of such starts,
 * forgotten). Every run a round admits is woken here;
 * its first pass records `runtime.run.admitted` and starts it.
 */
export class FlowAdmission implements FlowAdmissions {
  /** Keys with a round running, and whether another was asked for meanwhile. */
  private readonly rounds = new Map<string, { again: boolean }>()
  private stopped = false
  private sweeping = false
  /** Rounds due later in this process (delayed starts, debounce windows, rate windows), by when. */
  private readonly timers = new Map<string, unknown>()
  /** Per key, the admission round this process has in the store (the next waits for it). */
  private readonly turns = new Map<string, Promise<unknown>>()
  /** Per key, the starts gathered for its next round, and that round's answer. */
  private readonly gathering = new Map<string, FlowEntry[]>()
  private readonly gathered = new Map<string, Promise<AdmitResult>>()
  /** Where the next sweep resumes (round-robin over the waiting keys). */
  private cursor: { queue: string; key: string } | null = null
  /** Orphaned debounce windows whose run this process is starting. */
  private readonly restarting = new Set<string>()

  constructor(
    private readonly ctx: EngineContext,
    readonly store: FlowStore,
    private readonly wake: (runId: string) => void,
    private readonly start: (args: StartRunArgs) => Promise<unknown>,
  ) {}

  /**
   * The engine's flow admission: none on a store without flow queues, which then refuses
   * definitions that declare flow control.
   */
  static create(
    ctx: EngineContext,
    wake: (runId: string) => void,
    start: (args: StartRunArgs) => Promise<unknown>,
  ): FlowAdmission | undefined {
    const controlled = ctx.registry.listDefinitions().filter((d) => d.flow !== undefined)
    const store = ctx.store.flow
    if (!ctx.capabilities.flow && controlled.length === 0) return undefined
    if (!ctx.capabilities.flow || !store) {
      throw new CompositionError(
        `definition ${controlled[0].kind}:${controlled[0].name} declares flow control, and the store has no flow queues (memoryStore, sqliteStore and postgresStore have)`,
        { definition: `${controlled[0].kind}:${controlled[0].name}` },
      )
    }
    return new FlowAdmission(ctx, store, wake, start)
  }

  /** How long a run admitted before its log exists keeps its slot without it. */
  private get holdMs(): number {
    return this.ctx.ownership?.leaseMs ?? 30_000
  }

  /**
   * A start's place in its definition's queue, or null when it needs none (no flow control and
   * no `startAt` to wait for). The key functions' errors are the caller's bad input (nothing
   * written yet).
   */
  place(
    definition: Definition,
    input: unknown,
    now: number,
    options: { priority?: number; startAt?: number },
  ): FlowPlace | null {
    const flow = definition.flow
    const startAt = options.startAt ?? now
    if (!flow && startAt <= now) return null
    const label = `${definition.kind} ${definition.name}@${definition.version}`
    const place: FlowPlace = {
      queue: flowQueue(definition),
      key: flowKey(label, queueKeyOf(flow), input),
      priority: options.priority ?? 0,
      startAt,
    }
    if (flow?.singleton?.mode === 'skip') place.skip = true
    const debounce = flow?.debounce
    if (debounce) {
      const key = flowKey(label, debounce.key, input)
      place.debounce = { key, periodMs: debounce.periodMs }
      if (debounce.maxWaitMs !== undefined) place.debounce.maxWaitMs = debounce.maxWaitMs
    }
    return place
  }

  /** The limit a queue's rounds admit under (its default version's; 1 for a singleton). */
  limitOf(queue: string): number {
    const flow = this.ctx.registry.flowOf(queue)
    if (flow?.singleton) return 1
    return flow?.concurrency?.limit ?? UNLIMITED_FLOW
  }

  /** The rate a queue's rounds admit under, if its default version declares one. */
  private rateOf(queue: string): { limit: number; periodMs: number } | undefined {
    const rate = this.ctx.registry.flowOf(queue)?.rate
    return rate && { limit: rate.limit, periodMs: rate.periodMs }
  }

  /**
   * Queues a new run (before its log is written) and admits what the key's free slots allow,
   * in one store call; the others admitted with it are woken. A singleton `skip` start whose
   * key has a live run is not queued: the answer names that run (`joined`). A debounced start
   * joins its key's open window (`joined`: the window's run) or opens one with this run.
   */
  async enter(runId: string, place: FlowPlace, input: Json, inAppend = true): Promise<FlowEntered> {
    const now = this.ctx.clock.now()
    const admit = inAppend ? this.appendAdmission(place, now) : undefined
    if (admit) return { admitted: true, reason: 'concurrency', startAt: now, at: now, admit }
    const entry = { runId, ...this.entryOf(place), enqueuedAt: now }
    if (place.debounce) {
      const { key, periodMs, maxWaitMs } = place.debounce
      const window = await this.store.debounce({
        entry,
        key,
        input,
        periodMs,
        ...(maxWaitMs === undefined ? {} : { maxWaitMs }),
        abandonedBefore: now - this.holdMs,
      })
      this.startSweep()
      this.kickAt(place.queue, place.key, window.endsAt)
      if (!window.opened) return { joined: window.runId }
      return { admitted: false, reason: 'debounce', startAt: window.endsAt, at: now }
    }
    const result = place.skip
      ? await this.round(place.queue, place.key, { enqueue: entry, skipIfLive: true })
      : await this.enqueue(place.queue, place.key, entry)
    if (result.existing !== undefined) return { joined: result.existing }
    const admitted = result.admitted.includes(runId)
    if (!admitted) {
      this.startSweep()
      if (place.startAt > now) this.kickAt(place.queue, place.key, place.startAt)
    }
    const reason =
      place.startAt > now ? 'startAt' : result.retryAt !== undefined ? 'rate' : 'concurrency'
    return { admitted, reason, startAt: place.startAt, at: now }
  }

  /**
   * The admission a start's first append makes (`AppendOptions.admit`), when its store admits in
   * the append and the start waits only for a concurrency slot (no rate window, singleton
   * `skip`, debounce window or later `startAt`): no store call before the run's log, one
   * transaction for the entry and the log. Undefined otherwise.
   */
  private appendAdmission(place: FlowPlace, now: number): AppendAdmission | undefined {
    if (!this.store.admitsInAppend || place.skip || place.debounce || place.startAt > now) return
    if (this.rateOf(place.queue)) return
    const { queue, key, priority } = place
    return { queue, key, limit: this.limitOf(queue), priority, now, holdUntil: now + this.holdMs }
  }

  /**
   * Queues a start's entry (or, without one, asks for a round: `kick`) in a round of its key:
   * at once when this process has no round of the key in the store, else in the next round,
   * with every other start and kick of the key that arrives meanwhile (one store call for all
   * of them: `enqueueAll`, which admits what a round without entries would).
   */
  private enqueue(queue: string, key: string, entry?: FlowEntry): Promise<AdmitResult> {
    const id = `${queue}\n${key}`
    const gathering = this.gathering.get(id)
    if (gathering) {
      if (entry) gathering.push(entry)
      return this.gathered.get(id) as Promise<AdmitResult>
    }
    if (!this.turns.has(id)) return this.round(queue, key, entry ? { enqueue: entry } : {})
    const entries = entry ? [entry] : []
    this.gathering.set(id, entries)
    const result = this.round(queue, key, { enqueueAll: entries }, () => {
      this.gathering.delete(id)
      this.gathered.delete(id)
    })
    this.gathered.set(id, result)
    return result
  }

  private entryOf(place: FlowPlace) {
    return { queue: place.queue, key: place.key, priority: place.priority, startAt: place.startAt }
  }

  /**
   * A round of the key when `at` comes (a delayed start, a debounce window's end, a rate
   * window's next admission; the sweep covers a restart). One timer per key and time.
   */
  private kickAt(queue: string, key: string, at: number): void {
    const { clock } = this.ctx
    const id = `${queue}\n${key}\n${at}`
    if (this.stopped || this.timers.has(id)) return
    const timer = clock.setTimeout(
      () => {
        this.timers.delete(id)
        this.kick(queue, key)
      },
      Math.max(0, at - clock.now()),
    )
    this.timers.set(id, timer)
  }

  /**
   * A slot of the key may be free (a run ended) or a run was queued: one admission round
   * (joining the starts gathered for the key's next round, if any), after the one running for
   * the key, if any. Never throws (a failed round is logged; the sweep tries again).
   */
  kick(queue: string, key: string): void {
    if (this.stopped) return
    const id = `${queue}\n${key}`
    const running = this.rounds.get(id)
    if (running) {
      running.again = true
      return
    }
    const state = { again: false }
    this.rounds.set(id, state)
    void (async () => {
      try {
        do {
          state.again = false
          await this.enqueue(queue, key)
        } while (state.again && !this.stopped)
      } catch (error) {
        const fields = errorFields(error)
        this.ctx.log.error({ queue, key, ...fields }, `flow admission of ${queue} failed`)
      } finally {
        this.rounds.delete(id)
      }
    })()
  }

  /**
   * One admission round of the key in the store (queueing `extra.enqueue` first), after the
   * round this process has in the store for the key, if any: the rounds of one key run one
   * after another on every host anyway (the store serializes them), and waiting here keeps
   * them from holding store connections that the runs' appends need meanwhile.
   */
  private round(
    queue: string,
    key: string,
    extra: RoundExtra = {},
    starting: () => void = () => {},
  ): Promise<AdmitResult> {
    const id = `${queue}\n${key}`
    const previous = this.turns.get(id)
    const run = () => {
      starting()
      return this.roundNow(queue, key, extra)
    }
    const result = previous ? previous.then(run, run) : run()
    const settled = result.then(
      () => {},
      () => {},
    )
    this.turns.set(id, settled)
    void settled.then(() => {
      if (this.turns.get(id) === settled) this.turns.delete(id)
    })
    return result
  }

  /**
   * The round itself: wakes every run it admits except the one it queued, and, when the key's
   * rate window is full, asks for another round when it admits again.
   */
  private async roundNow(queue: string, key: string, extra: RoundExtra): Promise<AdmitResult> {
    const now = this.ctx.clock.now()
    const rate = this.rateOf(queue)
    // A gathered round that only kicks queues nothing: a round without entries.
    if (extra.enqueueAll?.length === 0) extra = {}
    const result = await this.store.admit({
      queue,
      key,
      limit: this.limitOf(queue),
      now,
      holdUntil: now + this.holdMs,
      ...extra,
      ...(rate ? { rate } : {}),
    })
    const own = new Set([extra.enqueue, ...(extra.enqueueAll ?? [])].map((e) => e?.runId))
    for (const runId of result.admitted) if (!own.has(runId)) this.wake(runId)
    if (result.retryAt !== undefined) this.kickAt(queue, key, result.retryAt)
    return result
  }

  /**
   * Starts the sweep (a claimed task: one process at a time), once: at boot when a definition
   * declares flow control or the store holds queued runs, else at the first queued start.
   */
  startSweep(): void {
    if (this.sweeping || this.stopped || !this.ctx.store.claims) return
    this.sweeping = true
    this.ctx.tasks.start({
      name: 'flow:admit',
      intervalMs: SWEEP_MS,
      // Short: a dead process's sweep passes on within seconds (its delayed starts and
      // stalled admissions wait for it); two processes sweeping at once is harmless, as every
      // admission is one atomic round in the store.
      leaseMs: SWEEP_LEASE_MS,
      work: () => this.sweep(),
    })
  }

  /** At boot: the sweep starts when anything may need it. */
  async boot(): Promise<void> {
    const controlled = this.ctx.registry.listDefinitions().some((d) => d.flow !== undefined)
    if (controlled || (await this.store.keys(0)).length > 0) this.startSweep()
  }

  /**
   * One sweep: every key with a due waiting run gets a round, visited round-robin from where
   * the last sweep stopped (so a store with more waiting keys than one sweep takes reaches
   * them all); stalled admissions are woken.
   */
  async sweep(): Promise<void> {
    const now = this.ctx.clock.now()
    const after = this.cursor ?? undefined
    const { keys, stalled } = await this.store.pending(now, now - STALLED_MS, SWEEP_KEYS, after)
    for (const runId of stalled) this.wake(runId)
    for (const { queue, key } of keys) this.kick(queue, key)
    this.cursor = keys.length === SWEEP_KEYS ? (keys[keys.length - 1] ?? null) : null
    for (const window of await this.store.orphanedWindows(now - this.holdMs, SWEEP_KEYS)) {
      this.restartWindow(window)
    }
    // Other entries of starts that died before their log: nobody was given their run's id
    // (a caller that named it retries the start, which queues it again), so they are dropped.
    await this.store.forgetAbandoned(now - this.holdMs)
    if (this.ctx.observing) await this.observeDepth(now)
  }

  /**
   * A debounce window whose start died before writing its run's log (its callers were given
   * that run's id): the run is started here, on the window's last input, as a retry of that
   * start (the store gives the start its own window back); it is admitted when the window
   * ends. Only a definition this process registers; another process that does starts it.
   */
  private restartWindow(window: OrphanedWindow): void {
    const colon = window.queue.indexOf(':')
    const kind = window.queue.slice(0, colon)
    const definitionName = window.queue.slice(colon + 1)
    const known = this.ctx.registry.resolve({ kind, name: definitionName })
    if (!known || this.restarting.has(window.runId)) return
    this.restarting.add(window.runId)
    const { runId, input } = window
    this.start({ kind, definitionName, runId, input })
      .catch((error) => {
        const fields = errorFields(error)
        this.ctx.log.warn({ runId, ...fields }, `starting orphaned debounce run ${runId} failed`)
      })
      .finally(() => this.restarting.delete(runId))
  }

  /**
   * The store's queues, per queue (every key summed), for an observer's gauges: reported by the
   * process that sweeps, one at a time, so the figures are the whole store's.
   */
  private async observeDepth(now: number): Promise<void> {
    const queues = new Map<
      string,
      { queue: string; active: number; queued: number; oldestWaitMs: number }
    >()
    for (const k of await this.store.keys(now - 60_000)) {
      const q = queues.get(k.queue) ?? { queue: k.queue, active: 0, queued: 0, oldestWaitMs: 0 }
      q.active += k.active
      q.queued += k.queued
      if (k.oldestQueuedAt !== null)
        q.oldestWaitMs = Math.max(q.oldestWaitMs, now - k.oldestQueuedAt)
      queues.set(k.queue, q)
    }
    this.ctx.observe({ type: 'flow.depth', runId: '', queues: [...queues.values()] })
  }

  stop(): void {
    this.stopped = true
    for (const timer of this.timers.values()) this.ctx.clock.clearTimeout(timer)
    this.timers.clear()
  }
}
