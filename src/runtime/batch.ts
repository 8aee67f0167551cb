import type { Outcome } from '../core/commands.js'
import type { EventEnvelope, EventOrigin } from '../core/envelope.js'
import { isTerminal } from '../core/envelope.js'
import { applyEvent, type RunFold, type ThreadRuntime } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import { matchesWait } from '../core/matching.js'
import type { AppendAdmission, Ids } from '../core/ports.js'
import type { Registry } from '../core/registry.js'
import {
  asRuntimeEvent,
  type EffectRequestedPayload,
  type PayloadOf,
  RT,
  RUNTIME_PREFIX,
} from '../core/runtime-events.js'

export interface EventMeta {
  threadId: string | null
  origin?: EventOrigin
  effectId?: string
  causationId?: string
  idempotencyKey?: string
  key?: string
}

const PENDING: Outcome = Object.freeze({ status: 'pending' })

/** An ephemeral inline effect: its request is recorded only if its attempt fails. */
export interface EphemeralRequest {
  payload: EffectRequestedPayload
  thread: ThreadRuntime
}

/**
 * The events of one wake iteration, folded into the run's fold as they are added (so later
 * decisions see them) and appended together with one `expectedSeq`. Adding an external or
 * module event also appends `runtime.wait.satisfied` for every open wait it matches: matching
 * is the writer's job and lands in the same batch as the event.
 */
export class Batch {
  readonly events: EventEnvelope[] = []
  readonly dirty = new Set<string>()
  /** Work to do once the batch is durable (worker dispatch and cancel calls). */
  readonly afterCommit: Array<() => unknown> = []
  /** Ephemeral inline attempts requested in this decide round, not yet run. */
  private pendingEphemeral: EphemeralRequest[] | undefined
  /** Threads holding ephemeral outcomes, cleared when the iteration stops deciding. */
  private ephemeralThreads: ThreadRuntime[] | undefined
  readonly expectedSeq: number
  idempotencyKey: string | undefined
  /** A new run's first commit takes its flow slot (`AppendOptions.admit`). */
  admit: AppendAdmission | undefined
  ts: number

  constructor(
    private readonly registry: Registry,
    private readonly ids: Ids,
    readonly fold: RunFold,
    now: number,
  ) {
    this.expectedSeq = fold.state.lastSeq
    this.ts = now
  }

  /** Records that `thread` asked for an ephemeral attempt (run later this round). */
  requestEphemeral(payload: EffectRequestedPayload, thread: ThreadRuntime): void {
    if (!thread.ephemeral) {
      thread.ephemeral = new Map()
      ;(this.ephemeralThreads ??= []).push(thread)
    }
    thread.ephemeral.set(payload.key, PENDING)
    ;(this.pendingEphemeral ??= []).push({ payload, thread })
  }

  /** The ephemeral attempts requested since the last call (to run now). */
  takeEphemeral(): EphemeralRequest[] | undefined {
    const taken = this.pendingEphemeral
    this.pendingEphemeral = undefined
    return taken
  }

  /** Forgets ephemeral requests and outcomes: the iteration has stopped deciding. */
  endEphemeral(): void {
    if (!this.ephemeralThreads) return
    for (const thread of this.ephemeralThreads) thread.ephemeral = undefined
    this.ephemeralThreads = undefined
    this.pendingEphemeral = undefined
  }

  /** The threads of one decide round, reused from round to round of this batch. */
  private readonly deciding: string[] = []

  /**
   * The dirty threads, in the order they became dirty, for one decide round; `dirty` is left
   * empty for the threads the round makes dirty. The list is the batch's own, valid until the
   * next call (rounds run one after another).
   */
  takeDirty(): readonly string[] {
    const threads = this.deciding
    threads.length = 0
    for (const threadId of this.dirty) threads.push(threadId)
    this.dirty.clear()
    return threads
  }

  get size(): number {
    return this.events.length
  }

  /** Adds one event; a runtime type's payload is checked against the catalog (runtime-events.ts). */
  add<T extends string>(type: T, payload: PayloadOf<T>, meta: EventMeta): EventEnvelope {
    const fold = this.fold
    const event: EventEnvelope = {
      id: this.ids.eventId(),
      runId: fold.state.runId,
      seq: fold.state.lastSeq + 1,
      ts: this.ts,
      type,
      payload: payload as Json,
      threadId: meta.threadId,
      origin: meta.origin ?? 'runtime',
    }
    if (meta.effectId !== undefined) event.effectId = meta.effectId
    if (meta.causationId !== undefined) event.causationId = meta.causationId
    if (meta.idempotencyKey !== undefined) event.idempotencyKey = meta.idempotencyKey
    if (meta.key !== undefined) event.key = meta.key
    applyEvent(this.registry, fold, event)
    this.events.push(event)
    this.markDirty(event)
    if (!type.startsWith(RUNTIME_PREFIX) && !isTerminal(fold.state.status)) this.matchWaits(event)
    return event
  }

  private markDirty(event: EventEnvelope): void {
    const fold = this.fold
    const threadId =
      event.threadId ?? (event.type.startsWith(RUNTIME_PREFIX) ? null : fold.state.rootThreadId)
    if (threadId && fold.books[threadId]) this.dirty.add(threadId)
    const ended = asRuntimeEvent(event)
    if (
      ended?.type === RT.threadCompleted ||
      ended?.type === RT.threadFailed ||
      ended?.type === RT.threadCancelled
    ) {
      const parent = fold.state.threads[ended.payload.threadId]?.parentThreadId
      if (parent) this.dirty.add(parent)
    }
  }

  private matchWaits(event: EventEnvelope): void {
    const fold = this.fold
    for (const waitId in fold.waits) {
      const wait = fold.waits[waitId]
      if (!wait || !matchesWait(wait, event)) continue
      const thread = fold.state.threads[wait.threadId]
      if (!thread || isTerminal(thread.status)) continue
      this.add(
        RT.waitSatisfied,
        {
          waitId: wait.waitId,
          threadId: wait.threadId,
          event: { seq: event.seq, type: event.type },
          value: event.payload,
        },
        { threadId: wait.threadId, causationId: event.id },
      )
    }
  }
}
