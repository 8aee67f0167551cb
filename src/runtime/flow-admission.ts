import type { Definition } from '../core/definition.js'
import { CompositionError } from '../core/errors.js'
import { type FlowPlace, flowKey, flowQueue } from '../core/flow.js'
import type { FlowStore } from '../core/ports.js'
import type { EngineContext, FlowAdmissions } from './context.js'
import { errorFields } from './logger.js'

/** A queue's limit when its default version declares no concurrency: its runs wait for nothing. */
const UNLIMITED = 2 ** 31 - 1

/** How often the admission sweep looks for waiting runs no round admitted (a missed kick). */
const SWEEP_MS = 1000
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
 * no round reached, admitted runs whose admitter died before starting them). Every run a
 * round admits is woken here; its first pass records `runtime.run.admitted` and starts it.
 */
export class FlowAdmission implements FlowAdmissions {
  /** Keys with a round running, and whether another was asked for meanwhile. */
  private readonly rounds = new Map<string, { again: boolean }>()
  private stopped = false

  constructor(
    private readonly ctx: EngineContext,
    readonly store: FlowStore,
    private readonly wake: (runId: string) => void,
  ) {}

  /** The engine's flow admission, or none when no definition declares flow control. */
  static create(ctx: EngineContext, wake: (runId: string) => void): FlowAdmission | undefined {
    const controlled = ctx.registry.listDefinitions().filter((d) => d.flow !== undefined)
    if (controlled.length === 0) return undefined
    const store = ctx.store.flow
    if (!ctx.capabilities.flow || !store) {
      throw new CompositionError(
        `definition ${controlled[0].kind}:${controlled[0].name} declares flow control, and the store has no flow queues (memoryStore, sqliteStore and postgresStore have)`,
        { definition: `${controlled[0].kind}:${controlled[0].name}` },
      )
    }
    return new FlowAdmission(ctx, store, wake)
  }

  /** How long a run admitted before its log exists keeps its slot without it. */
  private get holdMs(): number {
    return this.ctx.ownership?.leaseMs ?? 30_000
  }

  /**
   * A start's place in its definition's queue, or null without flow control. The key
   * function's errors are the caller's bad input (nothing written yet).
   */
  place(definition: Definition, input: unknown, now: number): FlowPlace | null {
    const concurrency = definition.flow?.concurrency
    if (!concurrency) return null
    const label = `${definition.kind} ${definition.name}@${definition.version}`
    return {
      queue: flowQueue(definition),
      key: flowKey(label, concurrency.key, input),
      priority: 0,
      startAt: now,
    }
  }

  /** The limit a queue's rounds admit under (its default version's). */
  limitOf(queue: string): number {
    return this.ctx.registry.flowOf(queue)?.concurrency?.limit ?? UNLIMITED
  }

  /**
   * Queues a new run (before its log is written) and admits what the key's free slots allow,
   * in one store call. Returns whether `runId` itself was admitted; the others admitted with it
   * are woken.
   */
  async enqueue(runId: string, place: FlowPlace, limit: number): Promise<boolean> {
    const now = this.ctx.clock.now()
    const admitted = await this.store.admit({
      queue: place.queue,
      key: place.key,
      limit,
      now,
      holdUntil: now + this.holdMs,
      enqueue: { runId, ...place, enqueuedAt: now },
    })
    let own = false
    for (const id of admitted) {
      if (id === runId) own = true
      else this.wake(id)
    }
    return own
  }

  /**
   * A slot of the key may be free (a run ended) or a run was queued: one admission round,
   * after the one running for the key, if any. Never throws (a failed round is logged; the
   * sweep tries again).
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
          await this.round(queue, key)
        } while (state.again && !this.stopped)
      } catch (error) {
        const fields = errorFields(error)
        this.ctx.log.error({ queue, key, ...fields }, `flow admission of ${queue} failed`)
      } finally {
        this.rounds.delete(id)
      }
    })()
  }

  private async round(queue: string, key: string): Promise<void> {
    const now = this.ctx.clock.now()
    const admitted = await this.store.admit({
      queue,
      key,
      limit: this.limitOf(queue),
      now,
      holdUntil: now + this.holdMs,
    })
    for (const runId of admitted) this.wake(runId)
  }

  /** Starts the sweep (a claimed task: one process at a time). */
  startSweep(): void {
    if (!this.ctx.store.claims) return
    this.ctx.tasks.start({
      name: 'flow:admit',
      intervalMs: SWEEP_MS,
      leaseMs: 10 * SWEEP_MS,
      work: () => this.sweep(),
    })
  }

  /** One sweep: every key with a due waiting run gets a round; stalled admissions are woken. */
  async sweep(): Promise<void> {
    const now = this.ctx.clock.now()
    const { keys, stalled } = await this.store.pending(now, now - STALLED_MS, SWEEP_KEYS)
    for (const runId of stalled) this.wake(runId)
    for (const { queue, key } of keys) this.kick(queue, key)
  }

  stop(): void {
    this.stopped = true
  }
}
