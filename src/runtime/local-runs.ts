import type { RunState } from '../core/envelope.js'
import { EngineStoppedError, StoreError, StoreUnavailableError } from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import { type Backoff, backoffAfter } from '../core/retry.js'
import type { EngineContext } from './context.js'
import { executableVersions, FleetPresence } from './fleet-presence.js'
import { errorFields } from './logger.js'
import { Claimer, claimDue } from './ownership/claimer.js'
import { type ControllerHost, RunController } from './run-controller.js'
import type { FoldCache } from './run-writer.js'

/** A deadline wake that failed: the deadline already fired, so the engine retries it. */
const WAKE_RETRY: Backoff = { initialMs: 1000, maxMs: 60_000 }
/** A drive that failed on the store, which may hold finished work not yet recorded. */
const DRIVE_RETRY: Backoff = { initialMs: 250, maxMs: 30_000 }
/** Released seats remembered for runs waiting on a deadline or a worker (`LocalRuns.releasedSeats`). */
const RELEASED_SEATS = 100_000

/**
 * The runs this process is serving: one controller per active run, made on first use and
 * dropped once the run is idle, the LRU of folds kept between calls (`runCacheSize`), and the
 * drives that reach runs from outside any call (a deadline fell due, an attempt settled). A
 * process-local map: it says which controller (and so which writer) serves a run here, never
 * who owns the run (across processes that is the store's business: docs/storage.md).
 */
export class LocalRuns {
  private readonly controllers = new Map<string, RunController>()
  private readonly folds = new Map<string, RunFold>()
  private readonly wakeFailures = new Map<string, number>()
  readonly host: ControllerHost

  constructor(private readonly ctx: EngineContext) {
    const cache: FoldCache = {
      get: (runId) => this.cachedFold(runId),
      set: (runId, fold) => this.cacheFold(runId, fold),
      delete: (runId) => this.folds.delete(runId),
    }
    this.host = {
      ctx,
      stopping: false,
      stopped: false,
      cache,
      released: (c) => {
        if (this.controllers.get(c.runId) !== c) return
        this.controllers.delete(c.runId)
        this.rememberReleased(c)
      },
    }
  }

  /** The run's controller, made if the run is not active. */
  controller(runId: string): RunController {
    let controller = this.controllers.get(runId)
    if (!controller) {
      controller = new RunController(this.host, runId)
      const epoch = this.releasedSeats.get(runId)
      if (epoch !== undefined) {
        this.releasedSeats.delete(runId)
        controller.writer.seat?.resumeReleased(epoch)
      }
      this.controllers.set(runId, controller)
    }
    return controller
  }

  /**
   * A dropped writer's seat this process let go, kept (by run, its epoch) while the run waits
   * for a deadline or for a worker's outcome: the wake, the claim that records the worker's
   * `started` and its callback take it back without reading the lease first, one store read
   * less each (decisions.md, "A due wake reads what it folds, once"; "A run waiting for its
   * worker is taken back without reading its lease"). At most RELEASED_SEATS, oldest
   * forgotten first (a forgotten one costs that read again).
   */
  private readonly releasedSeats = new Map<string, number>()

  private rememberReleased(controller: RunController): void {
    const { seat, mem } = controller.writer
    if (seat?.state.state !== 'released' || (mem.deadlineAt === null && !mem.awaitsWorker)) return
    this.releasedSeats.delete(controller.runId)
    this.releasedSeats.set(controller.runId, seat.state.epoch)
    if (this.releasedSeats.size > RELEASED_SEATS)
      this.releasedSeats.delete(this.releasedSeats.keys().next().value as string)
  }

  /** The run's controller if it is active. */
  active(runId: string): RunController | undefined {
    return this.controllers.get(runId)
  }

  /** Every active run's controller. */
  all(): RunController[] {
    return [...this.controllers.values()]
  }

  /**
   * A deadline fell due: one wake pass. Resolves when the pass is committed, not when the
   * attempts it started finish (those may wait on the same clock that called us).
   */
  async wakeDue(runId: string): Promise<RunState | undefined> {
    if (this.host.stopped) return undefined
    const controller = this.controller(runId)
    controller.halted = false
    try {
      const state = await controller.drive()
      this.wakeFailures.delete(runId)
      return state
    } catch (error) {
      // The deadline already fired: without a retry the run would sleep until someone wakes
      // it. Retry with capped backoff and tell the observer.
      const failures = (this.wakeFailures.get(runId) ?? 0) + 1
      this.wakeFailures.set(runId, failures)
      const delay = backoffAfter(failures, WAKE_RETRY)
      const fields = errorFields(error)
      this.ctx.observe({ type: 'wake.failed', runId, error: fields.message, retryInMs: delay })
      this.ctx.log.error(
        { runId, ...fields, retryInMs: delay },
        `deadline wake of run ${runId} failed; retrying in ${delay} ms`,
      )
      if (!this.host.stopped) this.ctx.scheduler.schedule(runId, this.ctx.clock.now() + delay)
      return undefined
    } finally {
      queueMicrotask(() => controller.settleIfIdle())
    }
  }

  /** Something finished outside a queue operation (an attempt, a worker call): drive the run. */
  requestDrive(runId: string, failures = 0): void {
    if (this.host.stopped) return
    const controller = this.controller(runId)
    controller.drive().catch((error) => {
      if (EngineStoppedError.is(error)) return
      const fields = errorFields(error)
      this.ctx.observe({ type: 'wake.failed', runId, error: fields.message })
      // A store that failed (an outage, a commit whose reply was lost) may hold finished work
      // this process has not recorded, and no deadline of this process may be due to retry it
      // (with ownership, the run's lease is this process's own): retry, backing off to 30 s.
      // With ownership, never slower than the lease's renewal: renewals go on while this work
      // is unrecorded (RunSeat.busy), so once the store is back the lease would stay held, and
      // a peer's call wait, until a retry far off (decisions.md, "Recording retries keep pace
      // with lease renewals").
      const storeFailed = StoreUnavailableError.is(error) || StoreError.is(error)
      const cap = Math.min(DRIVE_RETRY.maxMs, this.ctx.ownership?.renewMs ?? DRIVE_RETRY.maxMs)
      const next = backoffAfter(failures + 1, { initialMs: DRIVE_RETRY.initialMs, maxMs: cap })
      this.ctx.log.error(
        { runId, ...fields },
        storeFailed
          ? `wake of run ${runId} (recording finished work) failed; retrying in ${next} ms`
          : `wake of run ${runId} (recording finished work) failed; the next call or deadline retries`,
      )
      if (storeFailed) this.ctx.clock.setTimeout(() => this.requestDrive(runId, failures + 1), next)
    })
    // An execution may settle with nothing queued: let the controller notice it is idle.
    queueMicrotask(() => controller.settleIfIdle())
  }

  /** Resolves once every active run is idle (nothing queued, running or in flight). */
  async idle(): Promise<void> {
    for (;;) {
      const busy = this.all().filter((c) => c.busy)
      if (busy.length === 0) return
      await Promise.allSettled(busy.map((c) => c.whenIdle()))
    }
  }

  /**
   * The engine stops: every run is halted; resolves once no operation is running and the runs
   * this process owned are let go (another process takes them over without waiting for expiry).
   */
  async halt(): Promise<void> {
    this.stopClaiming()
    const controllers = this.all()
    for (const controller of controllers) controller.halt()
    await Promise.allSettled(controllers.map((c) => c.whenDrained()))
    await Promise.allSettled(controllers.map((c) => c.writer.letGo()))
  }

  private claimer: Claimer | undefined

  /**
   * With ownership, deadlines are claimed through the store instead of fired by every process
   * that knows them: every `pollMs` this process takes the leases of due runs nobody holds
   * (`claimDue`) and wakes them. That also finds the runs of an owner that died (a run with an
   * attempt in flight stores a deadline of "now"), once its lease expired. Not when the
   * ownership says `claimDue: false` (a cell engine: its host claims for it). Only the runs
   * of definition versions this process registers: on a mixed fleet the others wait for a
   * host that registers theirs (docs/deploys.md).
   */
  startClaiming(): Promise<void> {
    const own = this.ctx.ownership
    if (!own?.claimDue || this.claimer) return Promise.resolve()
    const { clock } = this.ctx
    this.claimer = new Claimer({
      clock,
      everyMs: own.pollMs,
      round: () =>
        claimDue(
          {
            claim: (now, limit) =>
              own.leases.claimDue(
                own.owner,
                now,
                now + own.leaseMs,
                limit,
                executableVersions(this.ctx.registry),
              ),
            onClaimed: ({ runId, epoch }, now) => {
              this.controller(runId).writer.seat?.adopt(epoch, now + own.leaseMs)
              void this.wakeDue(runId)
            },
            pageSize: () => 32,
            stopped: () => this.host.stopping,
          },
          clock,
        ),
      onError: (error) =>
        this.ctx.log.error(
          errorFields(error),
          `claiming due runs failed; retrying in ${own.pollMs} ms`,
        ),
    })
    this.claimer.start()
    // The fleet learns which versions this host executes (stranded runs: fleet-presence.ts).
    if (!this.ctx.store.claims) return Promise.resolve()
    this.presence = new FleetPresence(this.ctx, this.ctx.store.claims)
    return this.presence.start()
  }

  private stopClaiming(): void {
    this.claimer?.stop()
    this.presence?.stop()
  }

  private presence: FleetPresence | undefined

  /** A deleted run: its cached fold goes. */
  forget(runId: string): void {
    this.folds.delete(runId)
    this.releasedSeats.delete(runId)
  }

  /** A cached fold, without touching its place in the LRU (reads only peek). */
  peek(runId: string): RunFold | undefined {
    return this.folds.get(runId)
  }

  private cachedFold(runId: string): RunFold | undefined {
    const fold = this.folds.get(runId)
    if (fold) {
      this.folds.delete(runId)
      this.folds.set(runId, fold)
    }
    return fold
  }

  private cacheFold(runId: string, fold: RunFold): void {
    const size = this.ctx.options.runCacheSize
    if (size <= 0) return
    this.folds.delete(runId)
    this.folds.set(runId, fold)
    while (this.folds.size > size) this.folds.delete(this.folds.keys().next().value as string)
  }
}
