import { nextDeadline } from '../core/deadlines.js'
import type { EventEnvelope } from '../core/envelope.js'
import { isTerminal } from '../core/envelope.js'
import { emptyFold, type RunFold } from '../core/fold/index.js'
import type { AppendOptions } from '../core/ports.js'
import { type EngineContext, newRunMemory, type RunMemory } from './context.js'
import { deferredInputsSeed } from './deferred-inputs.js'
import { releasePermits } from './effect-gate.js'
import { RunSeat } from './ownership/run-seat.js'
import { catchUp, loadFold, saveSnapshot } from './snapshots.js'
import { type Seed, type SeedKind, WakePass, type WakeResult } from './wake-pass.js'
import { awaitsWorker } from './worker-dispatch.js'

/** A park with one event since the last snapshot writes no new one (the next load folds it). */
const PARK_SNAPSHOT_MIN_EVENTS = 2

/** Folds kept between calls (`runCacheSize`), checked against the store's tail on use. */
export interface FoldCache {
  get(runId: string): RunFold | undefined
  set(runId: string, fold: RunFold): void
  delete(runId: string): void
}

/**
 * The single writer of one run in this process: the only code that appends to the run's log.
 * It holds the run's memory (the fold, attempts in flight), loads the fold before an operation
 * and forgets it after a failed one, runs the wake passes (each append is a pass's commit with
 * the expected tail), and after each operation snapshots and schedules the run's next deadline.
 *
 * Its caller (RunController) decides *when* it writes: one operation at a time, in arrival
 * order. Ownership across processes attaches here, not to the controller: the run's seat
 * (runtime/ownership/run-seat.ts), taken when the writer loads the run, every commit of its
 * passes appended under its claim, renewed while attempts are in flight, let go when the run
 * parks.
 */
export class RunWriter {
  /** The run's fold as the latest operation left it, and its attempts in flight. */
  readonly mem: RunMemory = newRunMemory()
  /** Set by `markGenerated` until the first load. */
  private generated = false
  /** The run's seat when the engine enforces ownership (several processes on one store). */
  readonly seat: RunSeat | undefined
  /** Commits made so far (an operation that committed is not run again after losing the lease). */
  commits = 0

  constructor(
    readonly ctx: EngineContext,
    readonly runId: string,
    private readonly cache: FoldCache,
  ) {
    if (ctx.ownership) {
      this.seat = new RunSeat(ctx, ctx.ownership, runId)
      this.seat.onLost = () => this.dropWork()
      this.seat.busy = () => this.mem.inflight.size > 0 || this.mem.settled.length > 0
    }
  }

  /**
   * Makes this process the run's owner before an operation (a no-op without ownership). With
   * `wait` false (a deadline or a settled attempt drove the run) a run another process owns is
   * left to it: returns false.
   */
  own(wait: boolean): Promise<boolean> | boolean {
    const seat = this.seat
    if (!seat) return true
    if (this.generated) {
      seat.takeNew()
      return true
    }
    return seat.acquire(wait)
  }

  /**
   * One commit of a pass: the batch appended, under the run's seat when ownership is on (its
   * claim in `options.lease`; let go with this commit when the run parks with nothing due).
   * Counted once durable.
   */
  append(
    events: readonly EventEnvelope[],
    options: AppendOptions,
    parking: boolean,
    deadlineAt: number | null,
  ): Promise<void> {
    const { ctx, runId, seat } = this
    const appending = seat
      ? seat.commit(ctx.clock.now(), parking, deadlineAt, (claim) => {
          options.lease = claim
          return ctx.store.append(runId, events, options)
        })
      : ctx.store.append(runId, events, options)
    return this.counted(appending)
  }

  private async counted(appending: Promise<void>): Promise<void> {
    await appending
    this.commits++
  }

  /**
   * Another process owns the run now: the attempts in flight here are stopped (their outcomes
   * could not be recorded; the new owner runs them again as interrupted) and the fold dropped.
   */
  dropWork(): void {
    const mem = this.mem
    for (const execution of mem.inflight.values()) execution.abort(new Error('lease lost'))
    mem.inflight.clear()
    releasePermits(this)
    mem.settled.length = 0
    mem.notices.length = 0
    mem.waiter?.()
  }

  /**
   * The engine generated this run's id just now, so the store cannot hold it: the first load
   * skips reading the tail (the append's expected tail of 0 still fences a collision).
   */
  markGenerated(): void {
    this.generated = true
  }

  /** The current fold, caught up with the store's tail (another process may have moved it). */
  async load(): Promise<RunFold | null> {
    const ctx = this.ctx
    if (this.generated) {
      this.generated = false
      return null
    }
    let fold = this.mem.fold ?? this.cache.get(this.runId) ?? null
    // Only a fold in memory needs the tail (to check it is current). Without one, the newest
    // snapshot and the events after it are the run as stored: no read of the tail first (a
    // cold wake's round trip: decisions.md, "A due wake reads what it folds, once").
    if (fold) {
      const tail = await ctx.store.tail(this.runId)
      if (fold.state.lastSeq > tail) fold = null
      else if (fold.state.lastSeq < tail) fold = await catchUp(ctx, fold)
    }
    if (!fold) {
      const loaded = await loadFold(ctx, this.runId)
      fold = loaded?.fold ?? null
      // The events folded after the snapshot are not in it: the next park must snapshot them.
      if (loaded) this.mem.lastSnapshotSeq = loaded.snapshotSeq
    }
    this.mem.fold = fold
    return fold
  }

  /** A new run: an empty fold, which its first pass fills. */
  create(): RunFold {
    const fold = emptyFold(this.runId)
    this.mem.fold = fold
    return fold
  }

  /** A failed operation: the fold may hold events that never became durable. */
  discard(): void {
    this.mem.fold = null
    this.mem.deadlineSeq = -1
    this.cache.delete(this.runId)
  }

  /** One wake pass over `fold`, recording what `seed` adds first. */
  async pass(fold: RunFold, seed?: Seed, seedKind?: SeedKind): Promise<WakeResult> {
    // Input other hosts recorded for this run without executing it comes first, in its order.
    const deferred = deferredInputsSeed(this.ctx, fold)
    if (deferred) await new WakePass(this.ctx, this.mem, fold, this).run(deferred, 'input')
    return new WakePass(this.ctx, this.mem, fold, this).run(seed, seedKind)
  }

  /**
   * After an operation: mid-wake and park snapshots, then the run's next deadline scheduled
   * (or cancelled). `parked` = nothing queued and nothing in flight. `handOff` is called before
   * the fold is handed to the snapshot store for good (the caller reads it one last time).
   */
  async afterOperation(parked: boolean, handOff: () => void): Promise<void> {
    const { ctx, mem } = this
    const fold = mem.fold
    if (!fold) return
    const every = ctx.options.snapshotEvery
    // A finished run is not parked: unless it trims (which needs a snapshot to trim behind) it
    // is snapshotted only every `snapshotEvery` events, so a short run costs no snapshot write
    // (folding its few events on a cold read is as cheap).
    const finished = isTerminal(fold.state.status) && ctx.trim === undefined
    const sinceSnapshot = fold.state.lastSeq - mem.lastSnapshotSeq
    // A park that adds one event to the last snapshot leaves it to the next load, which folds
    // it for less than writing the whole fold again costs now: a worker effect parks after its
    // dispatch and again after its one `started` event (decisions.md, "A worker effect's claim
    // and its `started` park cost no fsync or snapshot"). Trimming needs snapshots at the tail.
    const parkDue =
      !finished &&
      (sinceSnapshot >= PARK_SNAPSHOT_MIN_EVENTS ||
        mem.lastSnapshotSeq === 0 ||
        ctx.trim !== undefined)
    const due =
      sinceSnapshot > 0 &&
      ((parked && (parkDue || every === 0)) || (every > 0 && sinceSnapshot >= every))
    try {
      if (due) {
        const keepUsing = !parked || ctx.options.runCacheSize > 0
        // A fold handed to the snapshot store is the store's now: an operation queued while
        // the save is in flight must load its own copy instead of mutating this one.
        if (!keepUsing) {
          handOff()
          mem.fold = null
        }
        await saveSnapshot(ctx, fold, keepUsing)
        mem.lastSnapshotSeq = fold.state.lastSeq
      }
    } catch (error) {
      ctx.observe({ type: 'snapshot.saved', runId: this.runId, error: String(error) })
    }
    // Computed by the pass's last commit, unless no pass appended since.
    const at = mem.deadlineSeq === fold.state.lastSeq ? mem.deadlineAt : nextDeadline(fold)
    // Null for a finished run unless a worker cancel awaits its acknowledgement.
    if (at === null) ctx.scheduler.cancel(this.runId)
    else ctx.scheduler.schedule(this.runId, at)
    mem.awaitsWorker = at === null && awaitsWorker(fold)
    if (parked) await this.seat?.releaseIfHeld()
    if (parked && ctx.observing) {
      ctx.observe({ type: 'run.parked', runId: this.runId, seq: fold.state.lastSeq })
    }
  }

  /**
   * The engine stops: in-flight attempts are aborted (they run again after a restart, as
   * interrupted attempts) and a pass waiting for quick attempts stops waiting. Returns whether
   * anything was in flight.
   */
  halt(): boolean {
    const mem = this.mem
    mem.stopped = true
    const cut = mem.inflight.size > 0
    for (const execution of mem.inflight.values()) execution.abort(new Error('engine stopped'))
    mem.inflight.clear()
    releasePermits(this)
    mem.waiter?.()
    this.seat?.stopRenewal()
    return cut
  }

  /** The engine stopped: the run is let go at once (another process takes it over). */
  letGo(): Promise<void> | undefined {
    return this.seat?.releaseIfHeld()
  }

  /** The run is idle: its fold goes to the cache (when there is one) and leaves memory. */
  release(): void {
    const fold = this.mem.fold
    if (fold && this.ctx.options.runCacheSize > 0) this.cache.set(this.runId, fold)
    this.mem.fold = null
  }
}
