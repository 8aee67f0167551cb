import { isTerminal } from '../core/envelope.js'
import type { EffectRecord } from '../core/fold.js'
import type { WorkerTask } from '../core/ports.js'
import { RT, type WorkerTimeouts } from '../core/runtime-events.js'
import type { Batch } from './batch.js'
import type { EngineContext, Execution, RunMemory } from './context.js'
import { failAttempt } from './effects-exec.js'

/** How long a cancel request waits for the worker's `cancelled` before the effect is ambiguous. */
export const DEFAULT_CANCELLATION_TIMEOUT_MS = 30_000

/**
 * What happened to a worker attempt outside a queue operation (a dispatch that threw, a cancel
 * the worker acknowledged at once). It travels as an execution's settlement, so the next pass
 * records it like any in-process outcome; `recordSettlement` hands it back here.
 */
export class WorkerNotice {
  constructor(
    readonly kind: 'dispatch-failed' | 'cancel-acknowledged',
    readonly message: string,
  ) {}
}

const definitionOf = (ctx: EngineContext, mem: RunMemory, effect: EffectRecord) =>
  mem.executors.get(effect.effectId) ?? ctx.registry.effects.get(effect.type)

export const taskOf = (runId: string, effect: EffectRecord, attempt: number): WorkerTask => ({
  runId,
  effectId: effect.effectId,
  attempt,
  type: effect.type,
  input: effect.input,
  threadId: effect.threadId,
  deadlineAt: effect.deadlineAt ?? null,
})

/**
 * Records `dispatched` for each worker effect due now (or `ambiguous` when no worker is
 * configured) and launches the `dispatch` calls once the batch is durable. The timeouts that
 * later callbacks apply are recorded with the dispatch, so the log decides them.
 */
export function dispatchWorkerEffects(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  effects: readonly EffectRecord[],
  launches: Array<() => void>,
): void {
  const runId = batch.fold.state.runId
  const now = batch.ts
  for (const effect of effects) {
    const meta = { threadId: effect.threadId, effectId: effect.effectId }
    if (!ctx.worker) {
      batch.add(
        RT.effectAmbiguous,
        {
          effectId: effect.effectId,
          attempt: effect.attempt,
          error: {
            code: 'NO_EXECUTOR',
            message: `effect type "${effect.type}" has no in-process handler and no worker is configured; retry it once one is`,
          },
        },
        meta,
      )
      continue
    }
    const definition = definitionOf(ctx, mem, effect)
    const timeouts: WorkerTimeouts = {}
    const startToClose = definition?.startToCloseMs ?? effect.timeoutMs ?? definition?.timeoutMs
    if (startToClose) timeouts.startToCloseMs = startToClose
    if (definition?.heartbeatMs) timeouts.heartbeatMs = definition.heartbeatMs
    if (definition?.cancellationTimeoutMs)
      timeouts.cancellationTimeoutMs = definition.cancellationTimeoutMs
    const scheduleToStart = definition?.scheduleToStartMs
    const attempt = effect.attempt + 1
    batch.add(
      RT.effectDispatched,
      {
        effectId: effect.effectId,
        attempt,
        deadlineAt: scheduleToStart ? now + scheduleToStart : null,
        ...(scheduleToStart ? { timeout: 'schedule_to_start' } : {}),
        timeouts,
      },
      meta,
    )
    const task = taskOf(runId, effect, attempt)
    const worker = ctx.worker
    launches.push(() =>
      callWorker(ctx, mem, runId, task, () => worker.dispatch(task), 'dispatch-failed'),
    )
  }
}

/**
 * Calls the worker; a throw or rejection (for `dispatch`) or a `'cancelled'` answer (for
 * `cancel`) becomes a notice for the next pass. An asynchronous call counts as in flight, so
 * the run is not quiescent until the worker has taken the task.
 */
function callWorker(
  ctx: EngineContext,
  mem: RunMemory,
  runId: string,
  task: WorkerTask,
  call: () => unknown,
  onError: 'dispatch-failed' | null,
): void {
  const execution: Execution = { effectId: task.effectId, attempt: task.attempt, abort() {} }
  const notice = (kind: WorkerNotice['kind'], message: string) => {
    execution.settled = { kind: 'error', error: new WorkerNotice(kind, message) }
    mem.settled.push(execution)
    if (mem.waiter) mem.waiter()
    else ctx.requestDrive(runId)
  }
  const answered = (value: unknown) => {
    if (value === 'cancelled' && onError === null) notice('cancel-acknowledged', 'acknowledged')
  }
  const failed = (error: unknown) => {
    if (onError) notice(onError, String((error as Error)?.message ?? error))
    else
      ctx.observe({ type: 'effect.attempt', runId, effectId: task.effectId, error: String(error) })
  }
  let result: unknown
  try {
    result = call()
  } catch (error) {
    failed(error)
    return
  }
  if (!(result instanceof Promise)) return answered(result)
  // Several asynchronous calls for one effect (dispatch, then cancel) each keep the run busy.
  const key = `${task.effectId}#worker#${onError ?? 'cancel'}`
  mem.inflight.set(key, execution)
  result.then(answered, failed).then(() => {
    if (mem.inflight.get(key) === execution) mem.inflight.delete(key)
    if (mem.waiter) mem.waiter()
    else ctx.requestDrive(runId)
  })
}

/** Records a notice if its attempt is still the effect's current one (else it is stale). */
export function recordWorkerNotice(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  effect: EffectRecord,
  attempt: number,
  notice: WorkerNotice,
): void {
  const meta = { threadId: effect.threadId, effectId: effect.effectId }
  if (notice.kind === 'cancel-acknowledged') {
    if (!effect.cancelRequested) return
    batch.add(
      RT.effectCancelled,
      { effectId: effect.effectId, attempt, reason: 'the worker had not started it' },
      meta,
    )
    return
  }
  if (effect.cancelRequested) return
  const error = { code: 'DISPATCH_FAILED', message: `worker dispatch failed: ${notice.message}` }
  // With a schedule-to-start deadline a lost task is bounded, so a retry is safe; without
  // one nobody can tell whether the worker got it: an operator decides.
  if (effect.deadlineKind === 'schedule_to_start') {
    failAttempt(ctx, mem, batch, effect, attempt, error, 'error')
    return
  }
  batch.add(RT.effectAmbiguous, { effectId: effect.effectId, attempt, error }, meta)
}

/**
 * Asks the worker to stop an in-flight attempt: records `cancel.requested` with the
 * cancellation deadline and calls `worker.cancel` once durable. Returns false for effects
 * that are not in a worker's hands (the caller cancels those outright).
 */
export function requestWorkerCancel(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  effect: EffectRecord,
  reason: string,
): boolean {
  if (effect.execution !== 'worker') return false
  if (effect.status !== 'dispatched' && effect.status !== 'started') return false
  if (effect.cancelRequested) return true
  const timeout = effect.timeouts?.cancellationTimeoutMs ?? DEFAULT_CANCELLATION_TIMEOUT_MS
  batch.add(
    RT.effectCancelRequested,
    { effectId: effect.effectId, attempt: effect.attempt, reason, deadlineAt: batch.ts + timeout },
    { threadId: effect.threadId, effectId: effect.effectId },
  )
  const worker = ctx.worker
  if (worker?.cancel) {
    const runId = batch.fold.state.runId
    const task = taskOf(runId, effect, effect.attempt)
    batch.afterCommit.push(() =>
      callWorker(ctx, mem, runId, task, () => worker.cancel?.(task), null),
    )
  }
  return true
}

/**
 * Enforces worker deadlines that fell due: a timed-out attempt is recorded `timed_out` and
 * failed (retried by policy); an unacknowledged cancel becomes `ambiguous`. In a finished run
 * only the latter apply.
 */
export function fireWorkerDeadlines(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  now: number,
): void {
  const fold = batch.fold
  const finished = isTerminal(fold.state.status)
  for (const effectId in fold.effects) {
    const effect = fold.effects[effectId]
    if (effect.execution !== 'worker' || effect.deadlineAt === undefined) continue
    if (effect.deadlineAt > now) continue
    if (effect.status !== 'dispatched' && effect.status !== 'started') continue
    const meta = { threadId: effect.threadId, effectId }
    const attempt = effect.attempt
    if (effect.cancelRequested) {
      batch.add(
        RT.effectAmbiguous,
        {
          effectId,
          attempt,
          error: {
            code: 'CANCEL_UNACKNOWLEDGED',
            message: 'the worker did not acknowledge the cancel request in time; it may still run',
          },
        },
        meta,
      )
      continue
    }
    if (finished) continue
    const timeout = effect.deadlineKind ?? 'start_to_close'
    if (ctx.observing) ctx.observe({ type: 'effect.timeout', runId: fold.state.runId, effectId })
    const task = taskOf(fold.state.runId, effect, attempt)
    batch.add(RT.effectTimedOut, { effectId, attempt, timeout }, meta)
    failAttempt(
      ctx,
      mem,
      batch,
      effect,
      attempt,
      { code: 'TIMED_OUT', message: `worker attempt ${attempt} missed its ${timeout} deadline` },
      'timeout',
    )
    const worker = ctx.worker
    if (worker?.cancel) {
      batch.afterCommit.push(() =>
        callWorker(ctx, mem, fold.state.runId, task, () => worker.cancel?.(task), null),
      )
    }
  }
}

/**
 * The worker part of a pass over a finished run: cancel acknowledgements are still recorded
 * and unacknowledged cancels still become ambiguous; every other outcome is dropped.
 */
export function finishedRunWorkerPass(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  now: number,
): void {
  for (const execution of mem.settled.splice(0)) {
    const notice = execution.settled?.kind === 'error' ? execution.settled.error : undefined
    if (!(notice instanceof WorkerNotice) || notice.kind !== 'cancel-acknowledged') continue
    const effect = batch.fold.effects[execution.effectId]
    if (!effect || effect.attempt !== execution.attempt) continue
    if (effect.status !== 'dispatched' && effect.status !== 'started') continue
    recordWorkerNotice(ctx, mem, batch, effect, execution.attempt, notice)
  }
  fireWorkerDeadlines(ctx, mem, batch, now)
}
