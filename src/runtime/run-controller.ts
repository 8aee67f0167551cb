import { nextDeadline } from '../core/deadlines.js'
import { isTerminal, type RunState } from '../core/envelope.js'
import {
  EngineStoppedError,
  RunOverloadedError,
  SeqConflictError,
  WakeLimitError,
} from '../core/errors.js'
import { type RunFold, viewState } from '../core/fold.js'
import { type EngineContext, newRunMemory, type RunMemory } from './context.js'
import { catchUp, loadFold, saveSnapshot } from './snapshots.js'
import { WakePass } from './wake-pass.js'

interface Op {
  name: string
  run: () => Promise<unknown>
  resolve: (value: any) => void
  reject: (error: unknown) => void
}

export interface ControllerHost {
  ctx: EngineContext
  /** `stop()` was called: calls are refused; completions of in-flight work still drive runs. */
  stopping: boolean
  /** The engine stopped: nothing runs any more. */
  stopped: boolean
  /** Cursor cache (runCacheSize), validated against the store tail on use. */
  cacheGet(runId: string): RunFold | undefined
  cacheSet(runId: string, fold: RunFold): void
  cacheDelete(runId: string): void
  /** Called when the controller has nothing queued and nothing in flight. */
  released(controller: RunController): void
}

const CONFLICT_RETRIES = 3

interface Waiter {
  resolve: (state: RunState) => void
  reject: (error: unknown) => void
}

/**
 * The single writer of one run inside this process: a FIFO of mutations (start, signal, wake,
 * cancel, callbacks, retries) that never interleave, plus the run's in-flight executions.
 * Different runs have different controllers and never wait for each other.
 */
export class RunController {
  readonly mem: RunMemory = newRunMemory()
  private readonly queue: Op[] = []
  private running = false
  private queuedDrive: Promise<RunState> | null = null
  private idleWaiters: Waiter[] = []
  private drainWaiters: Waiter[] = []
  /** `halt` cut work short (queued operations refused or attempts aborted). */
  private cutShort = false
  private cycleError: unknown
  /** Committed state after the latest operation. */
  private view: RunState | null = null
  /** The fold moved since `view` was made: the next read of `lastState` makes a new one. */
  private viewStale = false
  /** Set by `markGenerated` until the first load. */
  private generated = false

  /**
   * The run's state after the latest operation. Made on demand (most operations are never read
   * between one another); while an operation runs, the previous view is returned, never a
   * half-applied fold.
   */
  get lastState(): RunState | null {
    if (this.viewStale && !this.running && this.mem.fold) this.materializeView()
    return this.view
  }

  private materializeView(): void {
    if (this.mem.fold) this.view = viewState(this.mem.fold)
    this.viewStale = false
  }
  /** Set after a WakeLimitError: completions no longer drive the run until an explicit call. */
  halted = false

  constructor(
    private readonly host: ControllerHost,
    readonly runId: string,
  ) {}

  /** The run's fold when no operation is running (it is then the committed one), else null. */
  get foldBetweenOperations(): RunFold | null {
    return this.running ? null : this.mem.fold
  }

  get pending(): number {
    return this.queue.length + (this.running ? 1 : 0)
  }

  get busy(): boolean {
    return this.running || this.queue.length > 0 || this.mem.inflight.size > 0
  }

  /**
   * Queues a mutation; rejects at once with RunOverloadedError past the limit, and with
   * EngineStoppedError once the engine is stopping (only `drive`, which records the outcomes
   * of work already in flight, still runs while a graceful stop waits).
   */
  enqueue<T>(name: string, run: (fold: RunFold | null) => Promise<T>): Promise<T> {
    if (this.host.stopped || (this.host.stopping && name !== 'drive')) {
      return Promise.reject(
        new EngineStoppedError('the engine is stopped: nothing was written', { runId: this.runId }),
      )
    }
    const limit = this.host.ctx.options.maxPendingRunOperations
    if (this.pending >= limit) {
      return Promise.reject(
        new RunOverloadedError(
          `run ${this.runId} has ${this.pending} operations active or queued (limit ${limit}); retry later`,
          { runId: this.runId, limit, retryAfterSeconds: 1 },
        ),
      )
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ name, run: () => this.withFold(run), resolve, reject })
      if (!this.running) void this.pump()
    })
  }

  /** A coalesced wake: joins a wake that is queued and not yet running. */
  drive(): Promise<RunState> {
    if (this.halted) return Promise.resolve(this.lastState as RunState)
    if (this.queuedDrive) return this.queuedDrive
    const promise = this.enqueue('drive', async (fold) => {
      if (this.queuedDrive === promise) this.queuedDrive = null
      if (!fold) return this.lastState as RunState
      return (await new WakePass(this.host.ctx, this.mem, fold).run()).state
    })
    this.queuedDrive = promise
    promise.catch(() => {})
    return promise
  }

  /**
   * Resolves with the run's state once nothing is queued or running: the run is parked or
   * finished, or the only work left is in-process attempts that outlived their quick-attempt
   * window (wake.ts `awaitQuickAttempts`). What `start`/`signal`/… resolve on by default.
   */
  whenDrained(): Promise<RunState> {
    if (!this.running && this.queue.length === 0) {
      return Promise.resolve(this.lastState as RunState)
    }
    return new Promise((resolve, reject) => this.drainWaiters.push({ resolve, reject }))
  }

  /** Resolves with the run's state once nothing is queued, running or in flight. */
  whenIdle(): Promise<RunState> {
    if (!this.busy) {
      const error = this.takeIdleError()
      return error === undefined
        ? Promise.resolve(this.lastState as RunState)
        : Promise.reject(error)
    }
    return new Promise((resolve, reject) => this.idleWaiters.push({ resolve, reject }))
  }

  /** What idle waiters are told instead of the state: a failed drive, or a stop cut work short. */
  private takeIdleError(): unknown {
    const error =
      this.cutShort && this.host.stopped
        ? new EngineStoppedError(
            `the engine stopped before run ${this.runId} settled; what was recorded is kept and the run continues after a restart`,
            { runId: this.runId },
          )
        : this.cycleError
    this.cycleError = undefined
    return error
  }

  /** Runs `run` with the current fold, reloading when the store moved; retries seq conflicts. */
  private async withFold<T>(run: (fold: RunFold | null) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const fold = await this.currentFold()
      try {
        const result = await run(fold)
        if (this.mem.fold) this.viewStale = true
        return result
      } catch (error) {
        // The fold may hold events that never became durable: forget it.
        this.mem.fold = null
        this.host.cacheDelete(this.runId)
        if (SeqConflictError.is(error) && attempt < CONFLICT_RETRIES) continue
        throw error
      }
    }
  }

  /**
   * The engine generated this run's id just now, so the store cannot hold it: the first load
   * skips reading the tail (the append's expected tail of 0 still fences a collision).
   */
  markGenerated(): void {
    if (!this.mem.fold && this.queue.length === 0 && !this.running) this.generated = true
  }

  private async currentFold(): Promise<RunFold | null> {
    const ctx = this.host.ctx
    if (this.generated) {
      this.generated = false
      return null
    }
    const tail = await ctx.store.tail(this.runId)
    let fold = this.mem.fold ?? this.host.cacheGet(this.runId) ?? null
    if (fold && fold.state.lastSeq > tail) fold = null
    if (fold && fold.state.lastSeq < tail) fold = await catchUp(ctx, fold)
    if (!fold && tail > 0) {
      const loaded = await loadFold(ctx, this.runId)
      fold = loaded?.fold ?? null
      // The events folded after the snapshot are not in it: the next park must snapshot them.
      if (loaded) this.mem.lastSnapshotSeq = loaded.snapshotSeq
    }
    this.mem.fold = fold
    return fold
  }

  private async pump(): Promise<void> {
    this.running = true
    while (this.queue.length > 0) {
      const op = this.queue.shift()!
      try {
        const value = await op.run()
        op.resolve(value)
      } catch (error) {
        if (WakeLimitError.is(error)) this.halted = true
        if (op.name === 'drive') this.cycleError ??= error
        op.reject(error)
      }
      await this.afterOperation()
    }
    this.running = false
    for (const waiter of this.drainWaiters.splice(0)) waiter.resolve(this.lastState as RunState)
    this.settleIfIdle()
  }

  /** Mid-wake snapshots, deadline scheduling; snapshots when the run parks. */
  private async afterOperation(): Promise<void> {
    const ctx = this.host.ctx
    const fold = this.mem.fold
    if (!fold) return
    const every = ctx.options.snapshotEvery
    const parked = this.queue.length === 0 && this.mem.inflight.size === 0
    // A finished run is not parked: unless it trims (which needs a snapshot to trim behind) it
    // is snapshotted only every `snapshotEvery` events, so a short run costs no snapshot write
    // (folding its few events on a cold read is as cheap).
    const finished = isTerminal(fold.state.status) && ctx.trim === undefined
    const sinceSnapshot = fold.state.lastSeq - this.mem.lastSnapshotSeq
    const due =
      sinceSnapshot > 0 &&
      ((parked && (!finished || every === 0)) || (every > 0 && sinceSnapshot >= every))
    try {
      if (due) {
        const keepUsing = !parked || ctx.options.runCacheSize > 0
        // A fold handed to the snapshot store is the store's now: an operation queued while
        // the save is in flight must load its own copy instead of mutating this one.
        if (!keepUsing) {
          if (this.viewStale) this.materializeView()
          this.mem.fold = null
        }
        await saveSnapshot(ctx, fold, keepUsing)
        this.mem.lastSnapshotSeq = fold.state.lastSeq
      }
    } catch (error) {
      ctx.observe({ type: 'snapshot.saved', runId: this.runId, error: String(error) })
    }
    // nextDeadline is null for a finished run unless a worker cancel awaits its ack.
    const at = nextDeadline(fold)
    if (at === null) ctx.scheduler.cancel(this.runId)
    else ctx.scheduler.schedule(this.runId, at)
    if (parked && ctx.observing) {
      ctx.observe({ type: 'run.parked', runId: this.runId, seq: fold.state.lastSeq })
    }
  }

  /**
   * The engine stops: queued operations are refused, in-flight attempts aborted (they run
   * again after a restart, as interrupted attempts). An operation already running finishes
   * (its store call cannot be taken back); callers waiting for the run to settle are told the
   * engine stopped first.
   */
  halt(): void {
    this.mem.stopped = true
    const queued = this.queue.splice(0)
    this.queuedDrive = null
    const refused = new EngineStoppedError(
      `the engine stopped before this call on run ${this.runId} ran: nothing was written`,
      { runId: this.runId },
    )
    for (const op of queued) {
      if (op.name !== 'drive') this.cutShort = true
      op.reject(refused)
    }
    for (const execution of this.mem.inflight.values()) {
      execution.abort(new Error('engine stopped'))
      this.cutShort = true
    }
    this.mem.inflight.clear()
    // A pass waiting for quick attempts stops waiting: none of them will report now.
    this.mem.waiter?.()
    if (!this.running) this.settleIfIdle()
  }

  /** Called when an in-flight execution settles with nothing queued. */
  settleIfIdle(): void {
    if (this.busy) return
    const waiters = this.idleWaiters.splice(0)
    const error = this.takeIdleError()
    for (const waiter of waiters) {
      if (error !== undefined) waiter.reject(error)
      else waiter.resolve(this.lastState as RunState)
    }
    const fold = this.mem.fold
    if (fold && this.host.ctx.options.runCacheSize > 0) this.host.cacheSet(this.runId, fold)
    this.mem.fold = null
    this.host.released(this)
  }
}
