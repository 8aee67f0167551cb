import type {
  EffectAttemptView,
  QueueInfo,
  ReplayStep,
  RunOperationalStatus,
  StartOptions,
  StartRunArgs,
  WaitFor,
} from '../core/api-types.js'
import type { ArchivedRun, RestoredRun } from '../core/archive-types.js'
import type { Definition } from '../core/definition.js'
import { definitionLabel } from '../core/definition.js'
import type {
  EventEnvelope,
  EventInput,
  RunState,
  StartResult,
  TransientEvent,
} from '../core/envelope.js'
import {
  DefinitionNotFoundError,
  IdempotencyConflictError,
  InvalidRequestError,
  RunNotFoundError,
} from '../core/errors.js'
import { type RunFold, viewState } from '../core/fold/index.js'
import type { ForkOptions, ForkResult } from '../core/fork-types.js'
import type { MigrateOptions, RunMigration } from '../core/migration-types.js'
import type {
  DeletedRun,
  RunSummary,
  SummaryPage,
  SummaryQuery,
  WorkerCallbackInput,
  WorkerTask,
} from '../core/ports.js'
import type { ProjectionDefinition } from '../core/projection.js'
import type { Registry } from '../core/registry.js'
import { normalizeSummaryQuery } from '../core/summaries.js'
import { startKeyRunId } from '../core/uuid.js'
import type { EngineContext } from './context.js'
import {
  type Scheduled,
  scheduleFoldedDeadlines,
  scheduleStoredDeadlines,
} from './deadline-recovery.js'
import { missingDefinition } from './deferred-inputs.js'
import { deferSignalOf, deferWaitUrl, orDefer } from './deferred-operations.js'
import type { CallerContext, EngineRuntime, SignalOptions, StartHooks } from './engine-types.js'
import { flagStranded, fleetView } from './fleet-presence.js'
import { queueInfos } from './flow-admission.js'
import { joinedStart, type StartWaitHost, settleAfterAdmission } from './flow-start-waits.js'
import { planFork, writeFork } from './fork-plan.js'
import { LocalRuns } from './local-runs.js'
import { checkMigrateOptions, migrateRunOp } from './migrate-run.js'
import { cancelOp, retryEffectOp, signalOp, startOp } from './operations.js'
import { projectRun } from './projections.js'
import { effectAttempts, inspect, replay } from './queries.js'
import type { ControllerHost, RunController } from './run-controller.js'
import {
  checkDeleteOptions,
  type DeleteRunOptions,
  deleteRunOp,
  forgetDeletedRun,
} from './run-delete.js'
import { restoreRunOp } from './run-restore.js'
import { loadFoldForRead } from './snapshots.js'
import { foldedSummaryPage } from './summaries-fallback.js'
import { TransientListeners } from './transient-listeners.js'
import { checkId, checkIdempotencyKey, checkWait } from './validate.js'
import { completeByWaitUrl, type InRunQueueOp } from './wait-url-complete.js'
import type { WaitUrlOutcome, WaitUrlRequest } from './wait-urls.js'
import { metaOf } from './wake-pass.js'
import { startClaimedOp, workerCallbackOp } from './worker-callback.js'
import { releaseStuckAttemptOp, type StuckAttemptAction } from './worker-operator.js'
import { restoreWorkerTasksOp } from './worker-task-restore.js'

/** The embed API over one EngineContext: everything of docs/engine.md "The embed API" except HTTP. */
export class RuntimeEngine implements EngineRuntime {
  private readonly runs: LocalRuns
  private readonly transient = new TransientListeners()

  get registry(): Registry {
    return this.ctx.registry
  }

  constructor(readonly ctx: EngineContext) {
    this.runs = new LocalRuns(ctx)
  }

  private get host(): ControllerHost {
    return this.runs.host
  }

  /** The run's controller (also deferred-operations.ts's, for runs of versions this host lacks). */
  controller(runId: string): RunController {
    return this.runs.controller(runId)
  }

  /** What a flow-controlled start waits with (flow-start-waits.ts). */
  private readonly startWaits: StartWaitHost = {
    getRun: (runId) => this.getRun(runId),
    settle: (runId) =>
      this.mutate(
        runId,
        'wake',
        async (fold, controller) => {
          if (fold) await controller.writer.pass(fold)
        },
        'settled',
      ),
    stopping: () => this.host.stopping,
  }

  /**
   * A mutation on `runId`, then the run's state once its queue has drained (docs/engine.md,
   * "When a call resolves"): in-process attempts still running after their quick-attempt
   * window are not waited for unless `wait` is `'settled'`.
   */
  private async mutate(
    runId: string,
    name: string,
    run: (fold: RunFold | null, controller: RunController) => Promise<unknown>,
    wait: WaitFor = 'quick',
    /** The engine just made `runId`: no store holds it, so its first load reads nothing. */
    generated = false,
  ): Promise<RunState> {
    const controller = this.controller(runId)
    if (generated) controller.markGenerated()
    controller.halted = false
    await controller.enqueue(name, (fold) => run(fold, controller))
    return wait === 'settled' ? controller.whenIdle() : controller.whenDrained()
  }

  /**
   * A deadline fell due: one wake pass. Resolves when the pass is committed, not when the
   * attempts it started finish (those may wait on the same clock that called us).
   */
  wakeDue(runId: string): Promise<RunState | undefined> {
    return this.runs.wakeDue(runId)
  }

  /** Something finished outside a queue operation (an attempt, a worker call): drive the run. */
  requestDrive(runId: string): void {
    this.runs.requestDrive(runId)
  }

  async start(
    definition: Definition,
    input?: unknown,
    options: StartOptions = {},
  ): Promise<StartResult> {
    const resolved = this.registry.resolveObject(definition)
    if (!resolved) {
      throw new DefinitionNotFoundError(
        `${definitionLabel(definition ?? { kind: '?', name: '?' })} is not registered: add it to a module's definitions`,
      )
    }
    return this.startDefinition(resolved, input, options)
  }

  async startRun(args: StartRunArgs, hooks?: StartHooks): Promise<StartResult> {
    if (typeof args?.kind !== 'string' || typeof args.definitionName !== 'string') {
      throw new InvalidRequestError('startRun needs { kind, definitionName } strings')
    }
    if (args.definitionVersion !== undefined && typeof args.definitionVersion !== 'string') {
      throw new InvalidRequestError('definitionVersion must be a string')
    }
    const ref = { kind: args.kind, name: args.definitionName, version: args.definitionVersion }
    const definition = this.registry.resolve(ref)
    if (!definition)
      throw new DefinitionNotFoundError(`${definitionLabel(ref)} is not registered`, {
        kind: args.kind,
        definitionName: args.definitionName,
      })
    return this.startDefinition(definition, args.input, args, hooks)
  }

  private async startDefinition(
    definition: Definition,
    input: unknown,
    options: StartOptions,
    hooks?: StartHooks,
  ): Promise<StartResult> {
    const wait = checkWait(options.wait)
    if (options.idempotencyKey !== undefined) checkIdempotencyKey(options.idempotencyKey)
    // A keyed start without a runId names the run after its key: its retries find that run.
    const runId =
      options.runId ??
      (options.idempotencyKey === undefined
        ? this.ctx.ids.runId()
        : startKeyRunId(options.idempotencyKey))
    checkId(runId, 'runId')
    await hooks?.onRunId?.(runId)
    if (options.threadId !== undefined) checkId(options.threadId, 'threadId')
    const prepared = await startOp.prepare(this.ctx, definition, input, options)
    const generated = options.runId === undefined && options.idempotencyKey === undefined
    const { flow } = this.ctx
    // Flow control places a new run before its log is written (a retry of a start finds its
    // run instead); a singleton `skip` or a debounce window may give the start another run.
    if (prepared.place && flow && (generated || (await this.ctx.store.tail(runId)) === 0)) {
      const entered = await flow.enter(runId, prepared.place, prepared.input)
      if (entered.joined !== undefined)
        return joinedStart(this.ctx, this.startWaits, entered.joined, wait)
      prepared.entered = entered
    }
    let threadId = ''
    const start = async (fold: RunFold | null, controller: RunController) => {
      const result = await startOp.run(controller.writer, fold, prepared, options)
      threadId = result.threadId
    }
    const state = await this.mutate(runId, 'start', start, wait, generated)
    if (wait === 'settled' && state.status === 'queued') {
      return {
        runId,
        threadId,
        state: await settleAfterAdmission(this.ctx, this.startWaits, runId),
      }
    }
    return { runId, threadId, state }
  }

  async getRun(runId: string): Promise<RunState> {
    // An active run's committed state, also while an operation runs (the previous one's view).
    const state = typeof runId === 'string' ? this.runs.active(runId)?.lastState : undefined
    if (state) return viewState({ state } as RunFold)
    // A run of a version this host lacks says so, and whether it is stranded.
    return fleetView(this.ctx, viewState(await this.readFold(runId)))
  }

  /** The committed fold of a run for reading (never the one a writer is working on). */
  async readFold(runId: string): Promise<RunFold> {
    if (typeof runId !== 'string') throw new RunNotFoundError('run not found')
    const active = this.runs.active(runId)
    // Between operations the writer's fold is the committed one; during one it is half-way
    // through a pass (effects recorded but not yet appended), so reads go to the store then.
    const between = active?.foldBetweenOperations
    if (active?.lastState && between) return { ...between, state: active.lastState }
    const tail = await this.ctx.store.tail(runId)
    const cached = this.runs.peek(runId)
    const fold =
      cached && cached.state.lastSeq === tail
        ? cached
        : tail > 0
          ? await loadFoldForRead(this.ctx, runId, tail)
          : null
    if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
    return fold
  }

  async getEvents(
    runId: string,
    options: { fromSeq?: number; limit?: number } = {},
  ): Promise<EventEnvelope[]> {
    const fromSeq = options.fromSeq ?? 1
    if (!Number.isInteger(fromSeq) || fromSeq < 0)
      throw new InvalidRequestError('fromSeq must be a non-negative integer')
    if (options.limit !== undefined && (!Number.isInteger(options.limit) || options.limit < 0)) {
      throw new InvalidRequestError('limit must be a non-negative integer')
    }
    const events = await this.ctx.store.read(runId, { fromSeq, limit: options.limit })
    if (events.length === 0 && (await this.ctx.store.tail(runId)) === 0) {
      throw new RunNotFoundError(`run ${runId} not found`, { runId })
    }
    return events
  }

  async signal(
    runId: string,
    events: readonly EventInput[],
    options: SignalOptions = {},
  ): Promise<RunState> {
    const prepared = await signalOp.prepare(this.ctx, events, options)
    const signal = () =>
      this.mutate(
        runId,
        'signal',
        (fold, controller) => signalOp.run(controller.writer, fold, prepared, options),
        prepared.wait,
      )
    try {
      return await signal()
    } catch (error) {
      // This host lacks the run's definition version: the input is recorded for a host that
      // registers it (docs/deploys.md).
      const missing = missingDefinition(error)
      if (missing !== undefined) {
        const request = { ...options, digest: prepared.digest }
        return deferSignalOf(this, runId, prepared.events, request, prepared.wait, missing)
      }
      // Another process recorded the same key first: the store refused the append (its error
      // names no seq, unlike the fold's own check). Reloaded with that key, the same events
      // are a no-op and others conflict.
      const fromStore =
        IdempotencyConflictError.is(error) && (error.details as { seq?: number })?.seq === undefined
      if (fromStore) return signal()
      throw error
    }
  }

  wake(runId: string): Promise<RunState> {
    return orDefer(this, runId, { type: 'wake' }, {}, () =>
      this.mutate(runId, 'wake', async (fold, controller) => {
        if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
        return (await controller.writer.pass(fold)).state
      }),
    )
  }

  cancel(runId: string, threadId?: string): Promise<RunState> {
    return orDefer(this, runId, { type: 'cancel', threadId }, {}, () =>
      this.mutate(runId, 'cancel', (fold, controller) =>
        cancelOp(controller.writer, fold, threadId),
      ),
    )
  }

  /**
   * Deletes the run whole (docs/data-lifecycle.md): in its queue, after what was queued
   * before; a later start with the same id is a new run.
   */
  async deleteRun(runId: string, options: DeleteRunOptions = {}): Promise<DeletedRun> {
    checkId(runId, 'runId')
    const { force = false } = checkDeleteOptions(options)
    const controller = this.controller(runId)
    const deleted = await controller.enqueue('delete', (fold) => {
      controller.keepLastView()
      return deleteRunOp(this.ctx, controller.writer, fold, runId, force)
    })
    await controller.whenDrained().catch(() => {})
    return deleted
  }

  /**
   * Brings an archived run back into the store (docs/data-lifecycle.md, "Restoring"), in its
   * queue; what this process cached of the id (a deleted run's absence) is dropped after.
   */
  async restoreRun(run: ArchivedRun): Promise<RestoredRun> {
    checkId(run?.runId, 'runId')
    const controller = this.controller(run.runId)
    const restored = await controller.enqueue('restore', (fold) =>
      restoreRunOp(this.ctx, fold, run),
    )
    await controller.whenDrained().catch(() => {})
    if (restored.restored) this.runs.forget(run.runId)
    return restored
  }

  /**
   * A new run from the events of `runId` before a cut, going on with the registered code
   * (docs/operating-runs.md, "Fork"); the source is only read.
   */
  async fork(runId: string, options: ForkOptions): Promise<ForkResult> {
    const plan = await planFork(this.ctx, runId, options)
    const controller = this.controller(plan.runId)
    await controller.enqueue('fork', (fold) => writeFork(this.ctx, fold, plan))
    await controller.whenDrained().catch(() => {})
    this.runs.forget(plan.runId)
    const state = await this.wake(plan.runId)
    const { forkedFrom } = plan
    return { runId: plan.runId, threadId: state.rootThreadId, state, forkedFrom }
  }

  /** Runs another part deleted (a retention sweep): this process forgets what it cached. */
  async forgetDeleted(runId: string): Promise<void> {
    const active = this.runs.active(runId)
    active?.keepLastView()
    await forgetDeletedRun(this.ctx, active?.writer, runId)
    this.runs.forget(runId)
  }

  retryEffect(runId: string, effectId: string, caller: CallerContext = {}): Promise<RunState> {
    return orDefer(this, runId, { type: 'retryEffect', effectId }, caller, () =>
      this.mutate(runId, 'retryEffect', (fold, controller) =>
        retryEffectOp(controller.writer, fold, effectId, caller),
      ),
    )
  }

  requeueEffect(runId: string, effectId: string, caller: CallerContext = {}): Promise<RunState> {
    return this.releaseStuckAttempt(runId, effectId, 'requeue', caller)
  }

  failEffect(runId: string, effectId: string, caller: CallerContext = {}): Promise<RunState> {
    return this.releaseStuckAttempt(runId, effectId, 'fail', caller)
  }

  private releaseStuckAttempt(
    runId: string,
    effectId: string,
    action: StuckAttemptAction,
    caller: CallerContext,
  ): Promise<RunState> {
    return orDefer(this, runId, { type: 'releaseAttempt', effectId, action }, caller, () =>
      this.mutate(runId, `${action}Effect`, (fold, controller) =>
        releaseStuckAttemptOp(controller.writer, fold, effectId, action, caller),
      ),
    )
  }

  workerCallback(runId: string, input: WorkerCallbackInput): Promise<RunState> {
    return orDefer(this, runId, { type: 'workerCallback', callback: input }, {}, () =>
      this.mutate(runId, 'workerCallback', (fold, controller) =>
        workerCallbackOp(controller.writer, fold, input),
      ),
    )
  }

  /**
   * Records the attempts of tasks a worker queue claimed `started`, each run in one pass
   * (docs/workers.md, "Durable tasks"). A run whose pass fails contributes neither list: its
   * tasks' claims lapse and they are claimed again.
   */
  async startClaimedTasks(
    tasks: readonly WorkerTask[],
  ): Promise<{ ready: WorkerTask[]; stale: WorkerTask[] }> {
    const byRun = new Map<string, WorkerTask[]>()
    for (const task of tasks) {
      const list = byRun.get(task.runId)
      if (list) list.push(task)
      else byRun.set(task.runId, [task])
    }
    const ready: WorkerTask[] = []
    const stale: WorkerTask[] = []
    await Promise.all(
      [...byRun].map(async ([runId, list]) => {
        try {
          await this.mutate(runId, 'startClaimed', async (fold, controller) => {
            const started = await startClaimedOp(controller.writer, fold, list)
            ready.push(...started.ready)
            stale.push(...started.stale)
          })
        } catch (error) {
          this.ctx.log.warn({ runId, error: String(error) }, 'claimed worker tasks not started')
        }
      }),
    )
    return { ready, stale }
  }

  /** Puts back the tasks of the run's dispatched attempts the store lacks (worker-task-restore.ts). */
  async restoreWorkerTasks(runId: string): Promise<void> {
    await this.mutate(runId, 'restoreTasks', (_fold, c) => restoreWorkerTasksOp(this.ctx, c.writer))
  }

  /**
   * A POST to a wait URL (docs/schedules.md, "Wait URLs"): its wait completed in the run's
   * queue (wait-url-complete.ts).
   */
  completeWaitUrl(token: string, request: WaitUrlRequest): Promise<WaitUrlOutcome> {
    const inRunQueue = (runId: string, op: InRunQueueOp) =>
      this.mutate(runId, 'waitUrl', (fold, controller) => op(fold, controller.writer))
    return completeByWaitUrl(this.ctx, token, request, inRunQueue, deferWaitUrl(this))
  }

  /** Every flow-control key with a queued or admitted run (docs/flow-control.md). */
  queues(): Promise<QueueInfo[]> {
    return queueInfos(this.ctx)
  }

  /**
   * Moves a run not yet finished to another version of its definition, in its queue
   * (docs/deploys.md, "Migrating runs"); `dryRun` checks and writes nothing.
   */
  async migrateRun(
    runId: string,
    options: MigrateOptions,
    caller: CallerContext = {},
  ): Promise<RunMigration> {
    const checked = checkMigrateOptions(options)
    let migration: RunMigration | undefined
    await this.mutate(runId, 'migrate', async (fold, controller) => {
      migration = await migrateRunOp(this.ctx, controller.writer, fold, checked, caller)
    })
    return migration as RunMigration
  }

  listRuns(): Promise<string[]> {
    return this.ctx.store.listRuns()
  }

  /** One page of run summaries, newest first (see SummaryQuery). */
  async listRunSummaries(query?: SummaryQuery): Promise<SummaryPage> {
    const valid = normalizeSummaryQuery(query, this.ctx.registry.attributeTypes)
    if (this.ctx.capabilities.summaries)
      return flagStranded(this.ctx, await this.ctx.store.listSummaries!(valid))
    return foldedSummaryPage(this.ctx.store, valid, async (runId) => {
      const fold = await this.readFold(runId)
      const summary: RunSummary = { runId, ...metaOf(fold) }
      if (fold.state.attributes) summary.attributes = fold.state.attributes
      return summary
    })
  }

  async project<S = any>(runId: string, projection: ProjectionDefinition<S> | string): Promise<S> {
    return projectRun(this.ctx, await this.readFold(runId), projection)
  }

  async replayTo(runId: string, seq: number): Promise<ReplayStep | null> {
    if (!Number.isInteger(seq)) throw new InvalidRequestError('seq must be an integer')
    if ((await this.ctx.store.tail(runId)) === 0) {
      throw new RunNotFoundError(`run ${runId} not found`, { runId })
    }
    return replay(this.ctx, runId, seq)
  }

  async inspectRun(runId: string): Promise<RunOperationalStatus> {
    return inspect(this.ctx, await this.readFold(runId))
  }

  async listEffects(runId: string): Promise<EffectAttemptView[]> {
    return effectAttempts(await this.getEvents(runId))
  }

  async listThreads(runId: string) {
    return Object.values((await this.getRun(runId)).threads)
  }

  /** Schedules every run's durable deadline from the stored run index (boot, after restore). */
  async rescanTimers(): Promise<number> {
    return (await scheduleStoredDeadlines(this.ctx, this.readRunFold)).scheduled
  }

  /** Boot-time recovery: every durable deadline scheduled, due ones at once. */
  recoverOnBoot(): Promise<Scheduled> {
    return scheduleStoredDeadlines(this.ctx, this.readRunFold)
  }

  /** Rebuilds every deadline by folding every run (after restoring storage). */
  async recoverDeadlines(): Promise<number> {
    return (await scheduleFoldedDeadlines(this.ctx, this.readRunFold)).scheduled
  }

  private readonly readRunFold = (runId: string) => this.readFold(runId)

  async subscribe(
    runId: string,
    listener: (events: readonly EventEnvelope[]) => void,
  ): Promise<() => void> {
    if (!this.ctx.capabilities.subscribe)
      throw new InvalidRequestError('this store does not support live subscriptions')
    return this.ctx.store.subscribe!(runId, listener)
  }

  subscribeTransient(runId: string, listener: (event: TransientEvent) => void): () => void {
    return this.transient.subscribe(runId, listener)
  }

  publishTransient(event: Omit<TransientEvent, 'afterSeq'>): void {
    this.transient.publish(event, () => this.runs.active(event.runId)?.lastState?.lastSeq ?? 0)
  }

  idle(): Promise<void> {
    return this.runs.idle()
  }

  get stopped(): boolean {
    return this.host.stopped
  }

  /**
   * Refuses new calls and stops the scheduler at once; lets in-flight work finish for up to
   * `graceMs` (on the engine's clock); then aborts what is still in flight and settles every
   * pending call. Resolves once no operation is running (a store may be closed then).
   */
  stop(graceMs = 0): Promise<void> {
    this.stopping ??= this.shutdown(graceMs)
    return this.stopping
  }

  private stopping: Promise<void> | undefined

  /** With ownership: starts claiming due runs through the store (local-runs.ts). */
  startClaiming(): Promise<void> {
    return this.runs.startClaiming()
  }

  private async shutdown(graceMs: number): Promise<void> {
    this.host.stopping = true
    this.ctx.flow?.stop()
    await this.ctx.scheduler.stop()
    if (graceMs > 0) await this.idleWithin(graceMs)
    this.host.stopped = true
    await this.runs.halt()
    this.ctx.effectLimits?.stop()
    await this.ctx.tasks.stop()
  }

  /** Resolves when every run is idle or `ms` passed on the engine's clock. */
  private async idleWithin(ms: number): Promise<void> {
    let timer: unknown
    const elapsed = new Promise<void>((resolve) => {
      timer = this.ctx.clock.setTimeout(resolve, ms)
    })
    await Promise.race([this.runs.idle(), elapsed])
    this.ctx.clock.clearTimeout(timer)
  }
}
