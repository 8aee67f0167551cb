// Effects in a worker's hands: dispatching attempts, asking the worker to cancel them,
// enforcing their recorded deadlines, and recording what the worker's calls told us.
// What the worker reports through its callback is recorded by worker-callback.ts.
import { isTerminal } from '../core/envelope.js'
import type { EffectRecord, RunFold } from '../core/fold/index.js'
import type { WorkerTask } from '../core/ports.js'
import { RT, type WorkerTimeouts } from '../core/runtime-events.js'
import { failAttempt } from './attempt-outcomes.js'
import {
  type EngineContext,
  type Execution,
  type Pass,
  type RunMemory,
  reportBack,
  type WorkerNotice,
} from './context.js'
import { executorOf } from './effect-runner.js'

/** How long a cancel request waits for the worker's `cancelled` before the effect is ambiguous. */
export const DEFAULT_CANCELLATION_TIMEOUT_MS = 30_000

const taskOf = (runId: string, effect: EffectRecord, attempt: number): WorkerTask => ({
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
 * configured) and adds the `dispatch` calls to `launches`, made once the batch is durable. The
 * timeouts that later callbacks apply are recorded with the dispatch, so the log decides them.
 */
export function dispatchWorkerEffects(
  pass: Pass,
  effects: readonly EffectRecord[],
  launches: Array<() => void>,
): void {
  const { ctx, mem, batch } = pass
  const runId = pass.fold.state.runId
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
    const definition = executorOf(ctx, mem, effect)
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
        deadlineAt: scheduleToStart ? pass.now + scheduleToStart : null,
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
 * The tasks of a running run's worker attempts recorded `dispatched` and not yet `started`, with
 * no cancel request: the only attempts whose task can be missing from the store (a claim records
 * `started` before it removes the task; a cancel removes it). docs/workers.md, "Durable tasks".
 */
export function dispatchedTasks(fold: RunFold): WorkerTask[] {
  if (isTerminal(fold.state.status)) return []
  const out: WorkerTask[] = []
  for (const effectId in fold.effects) {
    const effect = fold.effects[effectId]
    if (effect.execution !== 'worker' || effect.status !== 'dispatched') continue
    if (effect.cancelRequested) continue
    out.push(taskOf(fold.state.runId, effect, effect.attempt))
  }
  return out
}

/** Whether a running run has a worker attempt out (dispatched or started): its outcome comes back. */
export function awaitsWorker(fold: RunFold): boolean {
  if (isTerminal(fold.state.status)) return false
  for (const effectId in fold.effects) {
    const effect = fold.effects[effectId]
    if (
      effect.execution === 'worker' &&
      (effect.status === 'dispatched' || effect.status === 'started')
    )
      return true
  }
  return false
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
  const notice = (kind: WorkerNotice['kind'], message: string) => {
    mem.notices.push({ effectId: task.effectId, attempt: task.attempt, kind, message })
    reportBack(ctx, mem, runId)
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
  const pending: Execution = { effectId: task.effectId, attempt: task.attempt, abort() {} }
  mem.inflight.set(key, pending)
  result.then(answered, failed).then(() => {
    if (mem.inflight.get(key) === pending) mem.inflight.delete(key)
    reportBack(ctx, mem, runId)
  })
}

/**
 * Records the notices that arrived since the last iteration, each only while its attempt is
 * still the effect's current one (else it is stale). A finished run records only cancel
 * acknowledgements: they settle a cancel request it made.
 */
export function recordWorkerNotices(pass: Pass): void {
  if (pass.mem.notices.length === 0) return
  const finished = isTerminal(pass.fold.state.status)
  for (const notice of pass.mem.notices.splice(0)) {
    const effect = pass.fold.effects[notice.effectId]
    if (!effect || effect.attempt !== notice.attempt) continue
    if (effect.status !== 'dispatched' && effect.status !== 'started') continue
    if (notice.kind === 'cancel-acknowledged') recordCancelAcknowledged(pass, effect)
    else if (!finished) recordDispatchFailed(pass, effect, notice.message)
  }
}

function recordCancelAcknowledged(pass: Pass, effect: EffectRecord): void {
  if (!effect.cancelRequested) return
  pass.batch.add(
    RT.effectCancelled,
    { effectId: effect.effectId, attempt: effect.attempt, reason: 'the worker had not started it' },
    { threadId: effect.threadId, effectId: effect.effectId },
  )
}

function recordDispatchFailed(pass: Pass, effect: EffectRecord, message: string): void {
  if (effect.cancelRequested) return
  const error = { code: 'DISPATCH_FAILED', message: `worker dispatch failed: ${message}` }
  // With a schedule-to-start deadline a lost task is bounded, so a retry is safe; without
  // one nobody can tell whether the worker got it: an operator decides.
  if (effect.deadlineKind === 'schedule_to_start') {
    failAttempt(pass, effect, effect.attempt, error, 'error')
    return
  }
  const meta = { threadId: effect.threadId, effectId: effect.effectId }
  pass.batch.add(
    RT.effectAmbiguous,
    { effectId: effect.effectId, attempt: effect.attempt, error },
    meta,
  )
}

/**
 * Asks the worker to stop an in-flight attempt: records `cancel.requested` with the
 * cancellation deadline and calls `worker.cancel` once durable. Returns false for effects
 * that are not in a worker's hands (the caller cancels those outright).
 */
export function requestWorkerCancel(pass: Pass, effect: EffectRecord, reason: string): boolean {
  if (effect.execution !== 'worker') return false
  if (effect.status !== 'dispatched' && effect.status !== 'started') return false
  if (effect.cancelRequested) return true
  const timeout = effect.timeouts?.cancellationTimeoutMs ?? DEFAULT_CANCELLATION_TIMEOUT_MS
  pass.batch.add(
    RT.effectCancelRequested,
    { effectId: effect.effectId, attempt: effect.attempt, reason, deadlineAt: pass.now + timeout },
    { threadId: effect.threadId, effectId: effect.effectId },
  )
  cancelAfterCommit(pass, effect)
  return true
}

/** Calls `worker.cancel` for the effect's current attempt once the batch is durable. */
export function cancelAfterCommit(pass: Pass, effect: EffectRecord): void {
  const { ctx, mem } = pass
  const worker = ctx.worker
  if (!worker?.cancel) return
  const runId = pass.fold.state.runId
  const task = taskOf(runId, effect, effect.attempt)
  pass.batch.afterCommit.push(() =>
    callWorker(ctx, mem, runId, task, () => worker.cancel?.(task), null),
  )
}

/**
 * Enforces worker deadlines that fell due: a timed-out attempt is recorded `timed_out` and
 * failed (retried by policy); an unacknowledged cancel becomes `ambiguous`. In a finished run
 * only the latter apply.
 */
export function fireWorkerDeadlines(pass: Pass): void {
  const { ctx, fold, batch } = pass
  const finished = isTerminal(fold.state.status)
  for (const effectId in fold.effects) {
    const effect = fold.effects[effectId]
    if (effect.execution !== 'worker' || effect.deadlineAt === undefined) continue
    if (effect.deadlineAt > pass.now) continue
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
    // The task as it was handed out, before the failure below moves the effect on.
    cancelAfterCommit(pass, effect)
    batch.add(RT.effectTimedOut, { effectId, attempt, timeout }, meta)
    const error = {
      code: 'TIMED_OUT',
      message: `worker attempt ${attempt} missed its ${timeout} deadline`,
    }
    failAttempt(pass, effect, attempt, error, 'timeout')
  }
}
