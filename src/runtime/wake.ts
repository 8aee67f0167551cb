import { withProps } from '../core/copy.js'
import { nextDeadline } from '../core/deadlines.js'
import { isTerminal, type RunState } from '../core/envelope.js'
import { WakeLimitError } from '../core/errors.js'
import { type EffectRecord, type RunFold, type TimerRecord, viewState } from '../core/fold.js'
import type { RunMeta } from '../core/ports.js'
import { RT } from '../core/runtime-events.js'
import { Batch } from './batch.js'
import { decideThread } from './commands-apply.js'
import type { EngineContext, Execution, RunMemory } from './context.js'
import {
  execute,
  executeInline,
  failAttempt,
  hasRunnable,
  recordSettlement,
  runEphemeral,
  runnableEffects,
} from './effects-exec.js'
import { logRunFailed } from './log-events.js'
import { snapshotDueInPass, snapshotInPass } from './snapshots.js'
import type { MaybePromise } from './validate.js'
import {
  dispatchWorkerEffects,
  finishedRunWorkerPass,
  fireWorkerDeadlines,
} from './worker-dispatch.js'

/** Decide rounds within one iteration before it is committed (bounds runaway emit loops). */
const MAX_DECIDE_ROUNDS = 64

export type Seed = (batch: Batch) => void | Promise<void>

/**
 * What a seed records: `'input'` (a start or a signal: nothing about work that already ran) or
 * `'outcome'` (a worker report, a cancel, an operator retry). Only an iteration that records no
 * outcome may defer its fsync.
 */
export type SeedKind = 'input' | 'outcome'

export interface WakeResult {
  state: RunState
  /** Events appended by this pass. */
  appended: number
}

/**
 * One wake pass over a run (one queue operation): iterations of { record finished attempts;
 * fire due timers; decide; start attempts; append } until nothing more can happen now. Each
 * iteration is one append with the expected tail. In-process attempts start after the append
 * that records them and report back through `requestDrive`, so the run queue is free while
 * effects run.
 *
 * Durability: an iteration that only starts in-process attempts (no outcome of earlier work, no
 * worker dispatch) is appended with `durability: 'deferred'`: the next iteration, which records those
 * attempts' outcomes, is fsynced and covers it, so a quick step costs one fsync. A pass never
 * ends with a deferred append unsynced (slow attempts are still running then), and every
 * operation is acknowledged only after its passes end.
 */
export async function wakePass(
  ctx: EngineContext,
  mem: RunMemory,
  fold: RunFold,
  seed?: Seed,
  seedKind: SeedKind = 'outcome',
): Promise<WakeResult> {
  const last = { deferred: false }
  const statusBefore = fold.state.status
  let result: WakeResult
  try {
    result = await wakeIterations(ctx, mem, fold, seed, seedKind, last)
  } catch (error) {
    // The caller sees the pass's own error; should this sync fail too, the next fsynced
    // commit covers the deferred append.
    if (last.deferred) await ctx.store.flush?.().catch(() => {})
    throw error
  }
  if (last.deferred) await ctx.store.flush?.()
  if (fold.state.status === 'failed' && statusBefore !== 'failed') logRunFailed(ctx, fold)
  return result
}

async function wakeIterations(
  ctx: EngineContext,
  mem: RunMemory,
  fold: RunFold,
  seed: Seed | undefined,
  seedKind: SeedKind,
  /** Whether the pass's latest append was deferred (a later FULL one covers earlier ones). */
  last: { deferred: boolean },
): Promise<WakeResult> {
  const runId = fold.state.runId
  let iterations = 0
  let appended = 0
  let first = true
  if (ctx.observing) ctx.observe({ type: 'wake.started', runId, seq: fold.state.lastSeq })
  for (;;) {
    const now = ctx.clock.now()
    const batch = new Batch(ctx.registry, ctx.ids, fold, now)
    if (first && seed) {
      const seeded = seed(batch)
      if (seeded instanceof Promise) await seeded
    }
    // Outcomes of earlier work (a seed's, finished attempts, fired timers) must be fsynced
    // before anything they caused runs.
    let recordsOutcome = first && seed !== undefined && seedKind === 'outcome'
    const launches: Array<() => void> = []
    let localLaunches = 0
    if (!isTerminal(fold.state.status)) {
      const before = batch.size
      if (mem.settled.length > 0) {
        const recording = recordFinished(ctx, mem, batch)
        if (recording) await recording
      }
      if (first) {
        recoverInterrupted(ctx, mem, batch)
        const threads = fold.state.threads
        for (const threadId in threads)
          if (!isTerminal(threads[threadId].status)) batch.dirty.add(threadId)
      }
      for (const threadId of mem.carryDirty) batch.dirty.add(threadId)
      mem.carryDirty.clear()
      fireDueTimers(ctx, batch, now)
      fireWorkerDeadlines(ctx, mem, batch, now)
      if (batch.size > before) recordsOutcome = true
      const deciding = decideRounds(ctx, mem, batch, now)
      if (deciding) await deciding
      startLocalAttempts(ctx, mem, batch, now, launches)
      localLaunches = launches.length
      if (hasRunnable(batch, mem, now, 'worker')) {
        dispatchWorkerEffects(ctx, mem, batch, runnableEffects(batch, mem, now, 'worker'), launches)
      }
    } else {
      finishedRunWorkerPass(ctx, mem, batch, now)
    }
    if (batch.size === 0) break
    iterations++
    if (iterations > ctx.options.maxWakeIterations) {
      throw new WakeLimitError(
        `run ${runId}: wake cycle exceeded maxWakeIterations (${ctx.options.maxWakeIterations}); committed events are kept and a later wake continues`,
        { runId, maxWakeIterations: ctx.options.maxWakeIterations },
      )
    }
    const deferSync =
      !recordsOutcome &&
      localLaunches > 0 &&
      launches.length === localLaunches &&
      batch.afterCommit.length === 0
    await commit(ctx, batch, deferSync)
    last.deferred = deferSync
    appended += batch.size
    // A stopped engine starts no handler (attempts recorded as started run again after a
    // restart, as interrupted attempts); tasks recorded as dispatched still go to the worker.
    for (let i = mem.stopped ? localLaunches : 0; i < launches.length; i++) launches[i]()
    if (launches.length > 0 && !mem.stopped) await awaitQuickAttempts(mem)
    for (const after of batch.afterCommit) {
      Promise.resolve()
        .then(after)
        .catch((error) => ctx.observe({ type: 'effect.attempt', runId, error: String(error) }))
    }
    first = false
    const more = !mem.stopped && hasWorkNow(ctx, mem, fold)
    // The fold is the committed state here (settled attempts are folded by the next batch).
    const beforeLimit = more && iterations === ctx.options.maxWakeIterations
    if (snapshotDueInPass(ctx, mem, fold, beforeLimit)) await snapshotInPass(ctx, mem, fold)
    if (!more) break
  }
  if (ctx.observing) {
    ctx.observe({ type: 'wake.finished', runId, seq: fold.state.lastSeq, iterations })
  }
  return new PassResult(fold, appended)
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

/**
 * Gives attempts just launched one macrotask to finish: fast in-process effects are then
 * recorded by this pass (one append per step, no extra queue operation); slow ones report
 * later through `requestDrive`. Whichever comes first (a settled attempt or the macrotask)
 * ends the wait. A settled attempt also cancels the macrotask: a queued one would hold the
 * run's memory until the event loop next turns, which a store that resolves appends at once
 * can put off for thousands of runs.
 */
export function awaitQuickAttempts(mem: RunMemory): Promise<void> {
  if (mem.inflight.size === 0) return Promise.resolve()
  return new Promise<void>((resolve) => {
    let macrotask: NodeJS.Immediate | undefined
    const done = () => {
      if (mem.waiter === done) mem.waiter = null
      if (macrotask !== undefined) clearImmediate(macrotask)
      macrotask = undefined
      resolve()
    }
    mem.waiter = done
    macrotask = setImmediate(done)
  })
}

/** Appends a batch with the run's meta (status, next durable deadline) in the same write. */
function commit(ctx: EngineContext, batch: Batch, deferSync: boolean): Promise<void> {
  const fold = batch.fold
  const appending = ctx.store.append(fold.state.runId, batch.events, {
    expectedSeq: batch.expectedSeq,
    idempotencyKey: batch.idempotencyKey,
    meta: metaOf(fold),
    durability: deferSync ? 'deferred' : 'immediate',
  })
  return ctx.observing ? observeAppend(ctx, batch, deferSync, appending) : appending
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

export function metaOf(fold: RunFold): RunMeta {
  const s = fold.state
  return {
    status: s.status,
    kind: s.kind,
    definitionName: s.definitionName,
    definitionVersion: s.definitionVersion,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    nextDeadlineAt: nextDeadline(fold, true),
  }
}

function hasWorkNow(ctx: EngineContext, mem: RunMemory, fold: RunFold): boolean {
  if (isTerminal(fold.state.status)) return false
  if (mem.carryDirty.size > 0 || mem.settled.length > 0) return true
  const at = nextDeadline(fold)
  return at !== null && at <= ctx.clock.now()
}

/** Attempts recorded as started that no execution in this process owns: the process died. */
function recoverInterrupted(ctx: EngineContext, mem: RunMemory, batch: Batch): void {
  const effects = batch.fold.effects
  for (const effectId in effects) {
    const effect = effects[effectId]
    if (effect.status !== 'started' || effect.execution === 'worker') continue
    if (mem.inflight.has(effect.effectId)) continue
    ctx.observe({
      type: 'effect.interrupted',
      runId: batch.fold.state.runId,
      effectId: effect.effectId,
      attempt: effect.attempt,
    })
    failAttempt(
      ctx,
      mem,
      batch,
      effect,
      effect.attempt,
      {
        code: 'INTERRUPTED',
        message: 'the process running this attempt stopped before recording its outcome',
      },
      'interrupted',
    )
  }
}

/** One item's work in a wake iteration (module-level functions: no closure per call). */
type Step<T> = (ctx: EngineContext, mem: RunMemory, batch: Batch, item: T) => MaybePromise<void>

/** Runs `step` over `items` in order: synchronously until a call returns a promise, then chained. */
function eachInOrder<T>(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  items: readonly T[],
  step: Step<T>,
  from = 0,
): MaybePromise<void> {
  for (let i = from; i < items.length; i++) {
    const pending = step(ctx, mem, batch, items[i])
    if (pending instanceof Promise) {
      return pending.then(() => eachInOrder(ctx, mem, batch, items, step, i + 1))
    }
  }
}

const recordExecution: Step<Execution> = (ctx, mem, batch, execution) =>
  execution.settled
    ? recordSettlement(ctx, mem, batch, execution.effectId, execution.attempt, execution.settled)
    : undefined

/** Records attempts that settled since the last iteration (synchronous unless a check awaits). */
function recordFinished(ctx: EngineContext, mem: RunMemory, batch: Batch): MaybePromise<void> {
  return eachInOrder(ctx, mem, batch, mem.settled.splice(0), recordExecution)
}

function fireDueTimers(ctx: EngineContext, batch: Batch, now: number): void {
  const fold = batch.fold
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
    ctx.observe({
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
    const timedOut = 'event' in wait.on
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

/**
 * Decides dirty threads and runs the inline attempts they ask for, round after round, until
 * nothing changes (or the round cap). Ephemeral outcomes live only as long as these rounds.
 * Synchronous unless a schema, a handler or a check returns a promise (no promise per round on
 * the common path).
 */
function decideRounds(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  now: number,
): MaybePromise<void> {
  let pending: MaybePromise<void>
  try {
    pending = decideFrom(ctx, mem, batch, now, 0)
  } catch (error) {
    batch.endEphemeral()
    throw error
  }
  if (pending instanceof Promise) return pending.finally(() => batch.endEphemeral())
  batch.endEphemeral()
}

function decideFrom(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  now: number,
  from: number,
): MaybePromise<void> {
  for (let round = from; ; round++) {
    if (isTerminal(batch.fold.state.status)) return
    if (batch.dirty.size === 0 && !hasRunnable(batch, mem, now, 'inline')) return
    if (round >= MAX_DECIDE_ROUNDS) {
      for (const threadId of batch.dirty) mem.carryDirty.add(threadId)
      return
    }
    const pending = decideRound(ctx, mem, batch, now)
    if (pending instanceof Promise) {
      return pending.then(() => decideFrom(ctx, mem, batch, now, round + 1))
    }
  }
}

/** One round: decide the dirty threads, then run the inline and ephemeral attempts they asked for. */
function decideRound(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  now: number,
): MaybePromise<void> {
  const threads = [...batch.dirty]
  batch.dirty.clear()
  const deciding = eachInOrder(ctx, mem, batch, threads, decideThread)
  if (deciding instanceof Promise)
    return deciding.then(() => runRoundAttempts(ctx, mem, batch, now))
  return runRoundAttempts(ctx, mem, batch, now)
}

function runRoundAttempts(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  now: number,
): MaybePromise<void> {
  const inline = eachInOrder(ctx, mem, batch, runnableEffects(batch, mem, now, 'inline'), runInline)
  if (inline instanceof Promise) return inline.then(() => runEphemerals(ctx, mem, batch))
  return runEphemerals(ctx, mem, batch)
}

const runInline: Step<EffectRecord> = (ctx, mem, batch, effect) => {
  const attempt = effect.attempt + 1
  const settlement = executeInline(ctx, mem, batch.fold.state.runId, effect, attempt)
  if (settlement instanceof Promise) {
    return settlement.then((s) => recordSettlement(ctx, mem, batch, effect.effectId, attempt, s))
  }
  return recordSettlement(ctx, mem, batch, effect.effectId, attempt, settlement)
}

function runEphemerals(ctx: EngineContext, mem: RunMemory, batch: Batch): MaybePromise<void> {
  const ephemeral = batch.takeEphemeral()
  if (ephemeral) return eachInOrder(ctx, mem, batch, ephemeral, runEphemeral)
}

/** Records attempt starts for runnable local effects; they launch once the batch is written. */
function startLocalAttempts(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  now: number,
  launches: Array<() => void>,
): void {
  const runId = batch.fold.state.runId
  for (const effect of runnableEffects(batch, mem, now, 'local')) {
    const attempt = effect.attempt + 1
    batch.add(
      RT.effectAttemptStarted,
      { effectId: effect.effectId, attempt },
      { threadId: effect.threadId, effectId: effect.effectId },
    )
    const record = effect
    launches.push(() => {
      const { execution, done } = execute(ctx, mem, runId, record, attempt)
      mem.inflight.set(record.effectId, execution)
      done.then(() => {
        if (mem.inflight.get(record.effectId) !== execution) return
        mem.inflight.delete(record.effectId)
        mem.settled.push(execution)
        if (mem.waiter) mem.waiter()
        else ctx.requestDrive(runId)
      })
    })
  }
}
