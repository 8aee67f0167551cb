import type { RunState } from '../core/envelope.js'
import {
  EngineStoppedError,
  LeaseLostError,
  RunOverloadedError,
  SeqConflictError,
  WakeLimitError,
} from '../core/errors.js'
import { type RunFold, viewState } from '../core/fold/index.js'
import type { EngineContext } from './context.js'
import { type FoldCache, RunWriter } from './run-writer.js'

interface Op {
  name: string
  /** What caused the call (causes.ts), when observing. */
  cause: string | undefined
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
  cache: FoldCache
  /** Called when the controller has nothing queued and nothing in flight. */
  released(controller: RunController): void
}

const CONFLICT_RETRIES = 3
/** Take-overs lost to another process before a call gives up (each waits for a let-go). */
const LEASE_RETRIES = 5

interface Waiter {
  resolve: (state: RunState) => void
  reject: (error: unknown) => void
}

/**
 * The ingress of one run inside this process: a FIFO of mutations (start, signal, wake, cancel,
 * callbacks, retries) that never interleave, each handed to the run's single writer
 * (run-writer.ts), and the callers waiting for the run to drain or settle. Different runs have
 * different controllers and never wait for each other.
 */
export class RunController {
  readonly writer: RunWriter
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

  /**
   * The run's state after the latest operation. Made on demand (most operations are never read
   * between one another); while an operation runs, the previous view is returned, never a
   * half-applied fold.
   */
  get lastState(): RunState | null {
    if (this.viewStale && !this.running && this.writer.mem.fold) this.materializeView()
    return this.view
  }

  /**
   * The run is being deleted: its fold becomes the view before the fold goes, so callers still
   * waiting on it (a settled start whose operation was still saving a snapshot when a retention
   * sweep deleted the finished run) are answered with that state, not with nothing. Also while
   * an operation runs: only a finished run is swept, and a delete runs in the run's queue.
   */
  keepLastView(): void {
    if ((this.viewStale || this.running) && this.writer.mem.fold) this.materializeView()
  }

  private materializeView(): void {
    const fold = this.writer.mem.fold
    if (fold) this.view = viewState(fold)
    this.viewStale = false
  }
  /** Set after a WakeLimitError: completions no longer drive the run until an explicit call. */
  halted = false

  constructor(
    private readonly host: ControllerHost,
    readonly runId: string,
  ) {
    this.writer = new RunWriter(host.ctx, runId, host.cache)
  }

  /** The run's fold when no operation is running (it is then the committed one), else null. */
  get foldBetweenOperations(): RunFold | null {
    return this.running ? null : this.writer.mem.fold
  }

  get pending(): number {
    return this.queue.length + (this.running ? 1 : 0)
  }

  get busy(): boolean {
    return this.running || this.queue.length > 0 || this.writer.mem.inflight.size > 0
  }

  /**
   * Queues a mutation; rejects at once with RunOverloadedError past the limit, and with
   * EngineStoppedError once the engine is stopping (only `drive`, which records the outcomes
   * of work already in flight, still runs while a graceful stop waits).
   */
  enqueue<T>(
    name: string,
    run: (fold: RunFold | null) => Promise<T>,
    unfolded?: () => Promise<T>,
  ): Promise<T> {
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
      const cause = this.host.ctx.causes?.current()
      this.queue.push({
        name,
        cause,
        run: () => (unfolded ? this.withSeat(unfolded) : this.withFold(run, name !== 'drive')),
        resolve,
        reject,
      })
      if (!this.running) void this.pump()
    })
  }

  /**
   * Queues an operation that runs as the run's owner without loading its fold: a host that
   * cannot fold the run (its definition version is not registered here) records input for one
   * that can (deferred-inputs.ts).
   */
  enqueueUnfolded<T>(name: string, run: () => Promise<T>): Promise<T> {
    return this.enqueue(name, run, run)
  }

  /** Runs `run` as the run's owner; retries seq conflicts and lost take-overs as `withFold` does. */
  private async withSeat<T>(run: () => Promise<T>): Promise<T> {
    for (let attempt = 0, lost = 0; ; attempt++) {
      const owning = this.writer.own(true)
      if (!(owning === true || (await owning))) continue
      try {
        return await run()
      } catch (error) {
        if (SeqConflictError.is(error) && attempt < CONFLICT_RETRIES) continue
        if (LeaseLostError.is(error) && lost++ < LEASE_RETRIES) continue
        throw error
      }
    }
  }

  /** A coalesced wake: joins a wake that is queued and not yet running. */
  drive(): Promise<RunState> {
    if (this.halted) return Promise.resolve(this.lastState as RunState)
    if (this.queuedDrive) return this.queuedDrive
    const promise = this.enqueue('drive', async (fold) => {
      if (this.queuedDrive === promise) this.queuedDrive = null
      if (!fold) return this.lastState as RunState
      return (await this.writer.pass(fold)).state
    })
    this.queuedDrive = promise
    promise.catch(() => {})
    return promise
  }

  /**
   * Resolves with the run's state once nothing is queued or running: the run is parked or
   * finished, or the only work left is in-process attempts that outlived their quick-attempt
   * window (effect-runner.ts `awaitQuickAttempts`). What `start`/`signal`/… resolve on by default.
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

  /**
   * Runs `run` with the current fold, reloading when the store moved; retries seq conflicts.
   * With ownership the writer first owns the run (waiting for another process to let it go,
   * unless `wait` is false: a drive of a run owned elsewhere does nothing and resolves
   * undefined), and an operation that lost a take-over race before it committed runs again.
   */
  private async withFold<T>(run: (fold: RunFold | null) => Promise<T>, wait: boolean): Promise<T> {
    for (let attempt = 0, lost = 0; ; attempt++) {
      const owning = this.writer.own(wait)
      if (!(owning === true || (await owning))) return undefined as T
      const fold = await this.writer.load()
      const commits = this.writer.commits
      try {
        const result = await run(fold)
        if (this.writer.mem.fold) this.viewStale = true
        return result
      } catch (error) {
        this.writer.discard()
        if (SeqConflictError.is(error) && attempt < CONFLICT_RETRIES) continue
        const committed = this.writer.commits !== commits
        if (LeaseLostError.is(error) && committed) {
          // The call's input was recorded by its first commit; another process took the run
          // before a later commit of the same pass (a deadline fell due in between). The run
          // goes on there: the call succeeded, and resolves with what the store holds.
          await this.viewFromStore()
          return undefined as T
        }
        if (LeaseLostError.is(error) && lost++ < LEASE_RETRIES) {
          attempt = 0
          continue
        }
        throw error
      }
    }
  }

  /** The view made from the run's committed log (the writer no longer owns the run). */
  private async viewFromStore(): Promise<void> {
    try {
      const fold = await this.writer.load()
      if (fold) this.view = viewState(fold)
    } catch {
      // The store failed too: the previous view stands.
    }
    this.writer.discard()
    this.viewStale = false
  }

  /**
   * The engine generated this run's id just now, so the store cannot hold it: the first load
   * skips reading the tail (the append's expected tail of 0 still fences a collision).
   */
  markGenerated(): void {
    if (!this.writer.mem.fold && this.queue.length === 0 && !this.running)
      this.writer.markGenerated()
  }

  private async pump(): Promise<void> {
    this.running = true
    while (this.queue.length > 0) {
      const op = this.queue.shift()!
      try {
        const value = await this.runOp(op)
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

  /**
   * Runs `op` under the run's latest cause (causes.ts), so what it starts (attempts, their
   * completions' drives) carries the cause on, not that of whichever call started the pump.
   */
  private runOp(op: Op): Promise<unknown> {
    const causes = this.host.ctx.causes
    if (!causes) return op.run()
    const mem = this.writer.mem
    if (op.cause !== undefined) mem.cause = op.cause
    return mem.cause === undefined ? op.run() : causes.run(mem.cause, op.run)
  }

  /** Mid-wake snapshots, deadline scheduling; snapshots when the run parks. */
  private afterOperation(): Promise<void> {
    const parked = this.queue.length === 0 && this.writer.mem.inflight.size === 0
    return this.writer.afterOperation(parked, () => {
      if (this.viewStale) this.materializeView()
    })
  }

  /**
   * The engine stops: queued operations are refused, in-flight attempts aborted (they run
   * again after a restart, as interrupted attempts). An operation already running finishes
   * (its store call cannot be taken back); callers waiting for the run to settle are told the
   * engine stopped first.
   */
  halt(): void {
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
    if (this.writer.halt()) this.cutShort = true
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
    this.writer.release()
    this.host.released(this)
  }
}
