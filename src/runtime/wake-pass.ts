import { withProps } from '../core/copy.js'
import { nextDeadline } from '../core/deadlines.js'
import { definitionLabel } from '../core/definition.js'
import { type EventEnvelope, isTerminal, type RunState } from '../core/envelope.js'
import { DefinitionNotFoundError, WakeLimitError } from '../core/errors.js'
import { type EffectRecord, type RunFold, type TimerRecord, viewState } from '../core/fold/index.js'
import type { AppendOptions, RunMeta } from '../core/ports.js'
import { RT } from '../core/runtime-events.js'
import { failAttempt, recordSettled } from './attempt-outcomes.js'
import { Batch } from './batch.js'
import { finishThread } from './commands-apply.js'
import type { EffectPermit, EngineContext, Pass, RunMemory } from './context.js'
import { decideRounds, hasRunnable, runnableEffects } from './decide-rounds.js'
import { admitAttempts, needsGate, releasePermits } from './effect-gate.js'
import { awaitQuickAttempts, launchAttempt } from './effect-runner.js'
import { logRunFailed } from './log-events.js'
import { addRootThread } from './root-thread.js'
import { snapshotDueInPass, snapshotInPass } from './snapshots.js'
import type { MaybePromise } from './validate.js'
import {
  dispatchWorkerEffects,
  fireWorkerDeadlines,
  recordWorkerNotices,
} from './worker-dispatch.js'

/** What an operation records first in its pass (a start's events, a signal, a cancel …). */
export type Seed = (pass: Pass) => void | Promise<void>

/**
 * What a seed records: `'input'` (a start or a signal: nothing about work that already ran) or
 * `'outcome'` (a worker report, a cancel, an operator retry). Only an iteration that records no
 * outcome may defer its fsync.
 */
export type SeedKind = 'input' | 'outcome'

/**
 * What a pass needs of its run's writer (run-writer.ts): each commit appended, under the run's
 * seat when ownership is on. `parking`: nothing is left running here after this commit, so
 * the seat may go with it unless `deadlineAt` is due already.
 */
export interface PassOwner {
  append(
    events: readonly EventEnvelope[],
    options: AppendOptions,
    parking: boolean,
    deadlineAt: number | null,
  ): Promise<void>
}

/** What an operation needs of a run's writer to record a seed (run-writer.ts implements it). */
export interface SeedWriter {
  readonly ctx: EngineContext
  readonly runId: string
  pass(fold: RunFold, seed?: Seed): Promise<WakeResult>
}

export interface WakeResult {
  state: RunState
  /** Events appended by this pass. */
  appended: number
}

/**
 * One wake pass over a run (one queue operation): iterations of { record finished attempts;
 * fire due timers and worker deadlines; decide; start attempts; dispatch to workers; commit }
 * until nothing more can happen now. Each iteration is one append with the expected tail. The
 * pass is the one object its steps share (context, run memory, fold, the iteration's batch and
 * time); the steps are its methods, some of them carried out in files of their own.
 *
 * In-process attempts start after the append that records them and report back through
 * `requestDrive`, so the run queue is free while effects run.
 *
 * Durability: an iteration that only starts in-process attempts (no outcome of earlier work, no
 * worker dispatch) is appended with `deferSync`: the next iteration, which records those
 * attempts' outcomes, is fsynced and covers it, so a quick step costs one fsync. A pass never
 * ends with a deferred append unsynced (slow attempts are still running then), and every
 * operation is acknowledged only after its passes end.
 */
export class WakePass implements Pass {
  batch: Batch
  now: number
  /** Whether the latest append was deferred (a later FULL one covers earlier ones). */
  private deferred = false
  private iterations = 0
  private appended = 0
  /** Permits of attempts recorded in the batch being written, launched only once it is. */
  private readonly unlaunched: EffectPermit[] = []

  constructor(
    readonly ctx: EngineContext,
    readonly mem: RunMemory,
    readonly fold: RunFold,
    private readonly owner: PassOwner,
  ) {
    this.now = ctx.clock.now()
    this.batch = new Batch(ctx.registry, ctx.ids, fold, this.now)
  }

  async run(seed?: Seed, seedKind: SeedKind = 'outcome'): Promise<WakeResult> {
    const statusBefore = this.fold.state.status
    let result: WakeResult
    try {
      result = await this.iterate(seed, seedKind)
    } catch (error) {
      // The caller sees the pass's own error; should this sync fail too, the next fsynced
      // commit covers the deferred append.
      if (this.deferred && this.ctx.capabilities.flush)
        await this.ctx.store.flush!().catch(() => {})
      if (this.ctx.observing) this.observeFailed(error)
      throw error
    }
    if (this.deferred && this.ctx.capabilities.flush) await this.ctx.store.flush!()
    const status = this.fold.state.status
    if (status === 'failed' && statusBefore !== 'failed') {
      logRunFailed(this.ctx, this.fold)
    }
    if (this.ctx.observing && status !== statusBefore && isTerminal(status)) {
      const { runId, kind, definitionName } = this.fold.state
      this.ctx.observe({ type: 'run.finished', runId, status, kind, definitionName })
    }
    // Its slot is free (the commit that ended it freed it): the key's next run is admitted.
    const flow = this.fold.flow
    if (flow && status !== statusBefore && isTerminal(status))
      this.ctx.flow?.kick(flow.queue, flow.key)
    return result
  }

  private async iterate(seed: Seed | undefined, seedKind: SeedKind): Promise<WakeResult> {
    const { ctx, mem, fold } = this
    const runId = fold.state.runId
    const maxIterations = ctx.options.maxWakeIterations
    if (ctx.observing) {
      ctx.observe({ type: 'wake.started', runId, seq: fold.state.lastSeq, cause: mem.cause })
    }
    for (let first = true; ; first = false) {
      if (!first) this.nextIteration()
      if (first && seed) {
        const seeded = seed(this)
        if (seeded instanceof Promise) await seeded
      }
      // Outcomes of earlier work (a seed's, finished attempts, fired timers) must be fsynced
      // before anything they caused runs.
      let recordsOutcome = first && seed !== undefined && seedKind === 'outcome'
      const launches: Array<() => void> = []
      let localLaunches = 0
      if (this.runDeadlineDue()) {
        this.fireRunDeadline()
        recordsOutcome = true
      }
      if (!isTerminal(fold.state.status)) {
        const before = this.batch.size
        const recording = this.recordFinished()
        if (recording) await recording
        if (first && fold.state.status === 'queued') await this.admitQueued()
        if (first) {
          this.recoverInterrupted()
          this.markLiveThreadsDirty()
        }
        for (const threadId of mem.carryDirty) this.batch.dirty.add(threadId)
        mem.carryDirty.clear()
        this.fireDueTimers()
        this.fireWorkerDeadlines()
        if (this.batch.size > before) recordsOutcome = true
        const deciding = this.decideRounds()
        if (deciding) await deciding
        const starting = this.startLocalAttempts(launches)
        if (starting) await starting
        localLaunches = launches.length
        this.dispatchWorkers(launches)
      } else {
        this.recordFinishedRun()
      }
      if (this.batch.size === 0) break
      if (++this.iterations > maxIterations) {
        throw new WakeLimitError(
          `run ${runId}: wake cycle exceeded maxWakeIterations (${maxIterations}); committed events are kept and a later wake continues`,
          { runId, maxWakeIterations: maxIterations },
        )
      }
      const deferSync =
        !recordsOutcome &&
        localLaunches > 0 &&
        launches.length === localLaunches &&
        this.batch.afterCommit.length === 0
      // Nothing left running here after this commit: it may let the run's seat go.
      const parking =
        launches.length === 0 &&
        mem.inflight.size === 0 &&
        mem.settled.length === 0 &&
        mem.notices.length === 0 &&
        mem.carryDirty.size === 0 &&
        this.batch.afterCommit.length === 0
      try {
        await this.commit(deferSync, parking)
      } catch (error) {
        this.releaseUnlaunched()
        throw error
      }
      if (mem.stopped) this.releaseUnlaunched()
      this.unlaunched.length = 0
      this.deferred = deferSync
      this.appended += this.batch.size
      // A stopped engine starts no handler (attempts recorded as started run again after a
      // restart, as interrupted attempts); tasks recorded as dispatched still go to the worker.
      for (let i = mem.stopped ? localLaunches : 0; i < launches.length; i++) launches[i]()
      if (launches.length > 0 && !mem.stopped) await awaitQuickAttempts(mem)
      this.runAfterCommit()
      const more = !mem.stopped && this.hasWorkNow()
      // The fold is the committed state here (settled attempts are folded by the next batch).
      const beforeLimit = more && this.iterations === maxIterations
      if (snapshotDueInPass(ctx, mem, fold, beforeLimit)) await this.snapshotInPass()
      if (!more) break
    }
    if (ctx.observing) {
      const { iterations } = this
      ctx.observe({ type: 'wake.finished', runId, seq: fold.state.lastSeq, iterations })
    }
    return new PassResult(fold, this.appended)
  }

  /** A pass that threw ends its wake too (an observer closes what `wake.started` opened). */
  private observeFailed(error: unknown): void {
    const { runId, lastSeq } = this.fold.state
    const message = String((error as Error)?.message ?? error)
    this.ctx.observe({
      type: 'wake.finished',
      runId,
      seq: lastSeq,
      outcome: 'error',
      error: message,
    })
  }

  private nextIteration(): void {
    this.now = this.ctx.clock.now()
    this.batch = new Batch(this.ctx.registry, this.ctx.ids, this.fold, this.now)
  }

  /**
   * Records what the worker's calls reported and the in-process attempts that settled since
   * the last iteration (synchronous unless a check of emitted events awaits).
   */
  recordFinished(): MaybePromise<void> {
    if (this.mem.notices.length > 0) recordWorkerNotices(this)
    if (this.mem.settled.length > 0) return recordSettled(this)
  }

  /**
   * A finished run records no more outcomes of its work, except a worker's answers to the
   * cancel requests it made (and their deadlines).
   */
  private recordFinishedRun(): void {
    this.mem.settled.length = 0
    releasePermits(this)
    recordWorkerNotices(this)
    fireWorkerDeadlines(this)
  }

  /**
   * A queued run whose entry flow control admitted (docs/flow-control.md): the admission is
   * recorded and its root thread starts. Still queued: nothing.
   */
  private async admitQueued(): Promise<void> {
    const { ctx, fold, batch, now } = this
    const { state } = fold
    const flow = ctx.flow
    const admission = flow && fold.flow ? await flow.store.admission(state.runId) : null
    if (!admission || !fold.flow) return
    const ref = { kind: state.kind, name: state.definitionName, version: state.definitionVersion }
    const definition = ctx.registry.resolve(ref)
    if (!definition) {
      throw new DefinitionNotFoundError(
        `run ${state.runId} was admitted, and ${definitionLabel(ref)} is not registered here to start it`,
        { runId: state.runId },
      )
    }
    const waitedMs = Math.max(0, now - state.createdAt)
    const admitted = { ...fold.flow, waitedMs, admittedAt: admission.at }
    // A debounced run starts with its window's last input (docs/flow-control.md).
    const input = admission.input ?? fold.startInput
    if (admission.input !== undefined) Object.assign(admitted, { input })
    batch.add(RT.runAdmitted, admitted, { threadId: null })
    if (ctx.observing)
      ctx.observe({ type: 'flow.admitted', runId: state.runId, queue: fold.flow.queue, waitedMs })
    addRootThread(ctx, batch, definition, state.rootThreadId, input)
  }

  /** Attempts recorded as started that no execution in this process owns: the process died. */
  recoverInterrupted(): void {
    const { ctx, fold } = this
    for (const effectId in fold.effects) {
      const effect = fold.effects[effectId]
      if (effect.status !== 'started' || effect.execution === 'worker') continue
      if (this.mem.inflight.has(effect.effectId)) continue
      ctx.observe({
        type: 'effect.interrupted',
        runId: fold.state.runId,
        effectId: effect.effectId,
        attempt: effect.attempt,
      })
      const error = {
        code: 'INTERRUPTED',
        message: 'the process running this attempt stopped before recording its outcome',
      }
      failAttempt(this, effect, effect.attempt, error, 'interrupted')
    }
  }

  /** A pass's first iteration decides every live thread (it may follow a restart or a change). */
  private markLiveThreadsDirty(): void {
    const threads = this.fold.state.threads
    for (const threadId in threads)
      if (!isTerminal(threads[threadId].status)) this.batch.dirty.add(threadId)
  }

  private runDeadlineDue(): boolean {
    const { deadlineAt, status } = this.fold.state
    return deadlineAt !== undefined && deadlineAt <= this.now && !isTerminal(status)
  }

  /**
   * The run's deadline passed: the run fails with RUN_TIMED_OUT, its threads, waits and
   * attempts ended as a cancel ends them (docs/workflows.md, "Run deadline").
   */
  fireRunDeadline(): void {
    const { runId, rootThreadId, deadlineAt } = this.fold.state
    const started = this.fold.state.createdAt
    const error = {
      code: 'RUN_TIMED_OUT',
      message: `run ${runId} passed its deadline (timeoutMs ${(deadlineAt ?? started) - started}) before it finished`,
      details: { deadlineAt: deadlineAt ?? null },
    }
    // Still queued by flow control (docs/flow-control.md): no thread ran; the run fails.
    if (this.fold.state.status === 'queued')
      this.batch.add(RT.runFailed, { error }, { threadId: null })
    else finishThread(this, rootThreadId, 'failed', error)
  }

  fireDueTimers(): void {
    const { fold, batch, now } = this
    let due: TimerRecord[] | undefined
    for (const timerId in fold.timers) {
      const timer = fold.timers[timerId]
      if (timer.at <= now) (due ??= []).push(timer)
    }
    if (!due) return
    due.sort((a, b) => a.at - b.at)
    for (const timer of due) {
      const wait = fold.waits[timer.waitId]
      const threadId = wait?.threadId ?? null
      this.ctx.observe({
        type: 'timer.fired',
        runId: fold.state.runId,
        timerId: timer.timerId,
        due: timer.at,
        latenessMs: now - timer.at,
      })
      const fired = batch.add(
        RT.timerFired,
        { timerId: timer.timerId, waitId: timer.waitId },
        { threadId },
      )
      if (wait?.status !== 'open') continue
      const timedOut = !('timer' in wait.on)
      const payload = {
        waitId: wait.waitId,
        threadId: wait.threadId,
        event: { seq: fired.seq, type: fired.type },
        value: { at: timer.at },
        ...(timedOut ? { timedOut: true } : {}),
      }
      batch.add(RT.waitSatisfied, payload, { threadId: wait.threadId, causationId: fired.id })
    }
  }

  fireWorkerDeadlines(): void {
    fireWorkerDeadlines(this)
  }

  decideRounds(): MaybePromise<void> {
    return decideRounds(this)
  }

  /**
   * Records attempt starts for runnable local effects; they launch once the batch is written.
   * Effects with flow control start only with a permit (effect-gate.ts); the others wait.
   */
  startLocalAttempts(launches: Array<() => void>): MaybePromise<void> {
    const effects = runnableEffects(this, 'local')
    const limits = this.ctx.effectLimits
    if (limits && needsGate(this, limits, effects)) {
      return admitAttempts(this, limits, effects).then((admitted) => {
        for (const { effect, permit } of admitted) this.startAttempt(launches, effect, permit)
      })
    }
    for (const effect of effects) this.startAttempt(launches, effect, undefined)
  }

  private startAttempt(
    launches: Array<() => void>,
    effect: EffectRecord,
    permit: EffectPermit | undefined,
  ): void {
    const { ctx, mem } = this
    const runId = this.fold.state.runId
    const attempt = effect.attempt + 1
    const started = this.batch.add(
      RT.effectAttemptStarted,
      { effectId: effect.effectId, attempt },
      { threadId: effect.threadId, effectId: effect.effectId },
    )
    if (permit) this.unlaunched.push(permit)
    launches.push(() => launchAttempt(ctx, mem, runId, effect, attempt, started.seq, permit))
  }

  /** An attempt whose start was not written (or that a stopped engine does not launch) holds no slot. */
  private releaseUnlaunched(): void {
    for (const permit of this.unlaunched.splice(0)) this.ctx.effectLimits?.release(permit)
  }

  dispatchWorkers(launches: Array<() => void>): void {
    if (hasRunnable(this, 'worker'))
      dispatchWorkerEffects(this, runnableEffects(this, 'worker'), launches)
  }

  /**
   * Appends the batch with the run's meta (status, next durable deadline) in the same write.
   * The run's next deadline is computed here, once per commit (twice while an attempt is in
   * flight): the meta, the pass's own "is anything due now?" and the scheduling after the
   * operation all read it.
   */
  commit(deferSync: boolean, parking = false): Promise<void> {
    const { ctx, fold, batch } = this
    const stored = nextDeadline(fold, true)
    // The same deadline, unless an attempt in flight made the stored one "at once" (0).
    const at = stored === null || stored > 0 ? stored : nextDeadline(fold)
    this.mem.deadlineAt = at
    this.mem.deadlineSeq = fold.state.lastSeq
    const options: AppendOptions = {
      expectedSeq: batch.expectedSeq,
      idempotencyKey: batch.idempotencyKey,
      meta: metaOf(fold, stored),
      admit: batch.admit,
      durability: deferSync ? 'deferred' : 'immediate',
      lease: undefined,
    }
    const appending = this.owner.append(batch.events, options, parking, at)
    return ctx.observing ? observeAppend(ctx, batch, deferSync, appending) : appending
  }

  snapshotInPass(): Promise<void> {
    return snapshotInPass(this.ctx, this.mem, this.fold)
  }

  /** Worker calls that wait for the commit (cancel requests), never awaited by the pass. */
  private runAfterCommit(): void {
    const { ctx } = this
    const runId = this.fold.state.runId
    for (const after of this.batch.afterCommit) {
      Promise.resolve()
        .then(after)
        .catch((error) => ctx.observe({ type: 'effect.attempt', runId, error: String(error) }))
    }
  }

  private hasWorkNow(): boolean {
    const mem = this.mem
    if (isTerminal(this.fold.state.status)) return false
    if (mem.carryDirty.size > 0 || mem.settled.length > 0 || mem.notices.length > 0) return true
    if (mem.permits.size > 0) return true
    const at = mem.deadlineAt
    return at !== null && at <= this.ctx.clock.now()
  }
}

/**
 * A pass's result; its state is made on first read (most callers read the controller's
 * committed state instead). A class, not a literal with a getter: each such literal gets a
 * map of its own in the old generation, whose getter closure then keeps the run's whole fold
 * alive through young collections (decisions.md, "No per-object getters or spread-then-add").
 */
class PassResult implements WakeResult {
  constructor(
    private readonly fold: RunFold,
    readonly appended: number,
  ) {}
  get state(): RunState {
    return viewState(this.fold)
  }
}

async function observeAppend(
  ctx: EngineContext,
  batch: Batch,
  deferSync: boolean,
  appending: Promise<void>,
): Promise<void> {
  const started = ctx.clock.now()
  const observation = { type: 'append', runId: batch.fold.state.runId, events: batch.size } as const
  try {
    await appending
  } catch (error) {
    const message = String((error as Error)?.message ?? error)
    const latencyMs = ctx.clock.now() - started
    ctx.observe(withProps(observation, { latencyMs, outcome: 'error', error: message }))
    throw error
  }
  const latencyMs = ctx.clock.now() - started
  ctx.observe(withProps(observation, { latencyMs, outcome: 'ok', deferSync }))
}

/** The run's meta as the store keeps it beside the log (status, times, next durable deadline). */
export function metaOf(fold: RunFold, nextDeadlineAt = nextDeadline(fold, true)): RunMeta {
  const s = fold.state
  return {
    status: s.status,
    kind: s.kind,
    definitionName: s.definitionName,
    definitionVersion: s.definitionVersion,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    nextDeadlineAt,
  }
}
