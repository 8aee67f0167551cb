// Recording how attempts ended: results with the events their handlers emitted, failures with
// the next attempt's schedule. Where the attempt ran (in this process, inline, on a worker) is
// not this file's concern: it is handed a Settlement or an error.
import { type ErrorInfo, TerminalError, toErrorInfo } from '../core/errors.js'
import type { EffectRecord } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import { backoffDelay, type RetryPolicy, resolveRetry } from '../core/retry.js'
import { RT } from '../core/runtime-events.js'
import type { EngineContext, Execution, Pass, Settlement } from './context.js'
import { executorOf } from './effect-runner.js'
import { logAttemptFailed } from './log-events.js'
import {
  andThen,
  jsonWithin,
  type MaybePromise,
  recordableError,
  validateEmittedEvent,
} from './validate.js'

type Emitted = Array<{ type: string; payload: Json }>

/**
 * Records the in-process attempts that settled since the last iteration, in the order they
 * settled. One of the two loops that stay synchronous until a check returns a promise (the
 * other is the decide rounds').
 */
export function recordSettled(pass: Pass): MaybePromise<void> {
  const settled = pass.mem.settled
  if (settled.length > 0) return recordFrom(pass, settled.splice(0), 0)
}

function recordFrom(pass: Pass, executions: Execution[], from: number): MaybePromise<void> {
  for (let i = from; i < executions.length; i++) {
    const { effectId, attempt, settled } = executions[i]
    if (!settled) continue
    const pending = recordSettlement(pass, effectId, attempt, settled)
    if (pending instanceof Promise) return pending.then(() => recordFrom(pass, executions, i + 1))
  }
}

/**
 * Records how an in-process attempt ended: emitted events and the result atomically, or the
 * failure and (policy permitting) the next attempt's schedule. Stale outcomes (the effect moved
 * on, e.g. it was cancelled) record nothing. Synchronous unless emitted events validate
 * asynchronously.
 */
export function recordSettlement(
  pass: Pass,
  effectId: string,
  attempt: number,
  settlement: Settlement,
): MaybePromise<void> {
  const effect = pass.fold.effects[effectId]
  if (!effect) return
  if (effect.execution !== 'inline') {
    if (effect.attempt !== attempt) return
    if (effect.status !== 'started') return
  }
  if (settlement.kind === 'ok') {
    return andThen(checkOutcome(pass.ctx, effect.type, settlement), (recorded) => {
      if ('error' in recorded) return failAttempt(pass, effect, attempt, recorded.error, 'terminal')
      const meta = { threadId: effect.threadId, effectId }
      for (const event of recorded.events) pass.batch.add(event.type, event.payload, meta)
      pass.batch.add(RT.effectCompleted, { effectId, attempt, result: recorded.result }, meta)
    })
  }
  if (settlement.kind === 'timeout') {
    const meta = { threadId: effect.threadId, effectId }
    pass.batch.add(RT.effectTimedOut, { effectId, attempt }, meta)
    const error = { code: 'TIMED_OUT', message: 'effect attempt timed out' }
    return failAttempt(pass, effect, attempt, error, 'timeout')
  }
  const reason = TerminalError.is(settlement.error) ? 'terminal' : 'error'
  return failAttempt(pass, effect, attempt, toErrorInfo(settlement.error), reason)
}

/**
 * An attempt's result as the log will hold it: JSON and at most `maxEventBytes` serialized
 * (the limit of every event, checked before anything is written), or why not.
 */
export function checkResult(
  ctx: EngineContext,
  result: unknown,
): { value: Json } | { error: ErrorInfo } {
  const max = ctx.options.maxEventBytes
  const checked = jsonWithin(result, max)
  if (checked.ok) return { value: checked.value }
  const message =
    'problem' in checked
      ? `effect result is not JSON: ${checked.problem.message} at ${checked.problem.path}`
      : `effect result is ${checked.bytes} bytes, over the limit of ${max} (limits.maxEventBytes)`
  return { error: { code: 'INVALID_RESULT', message } }
}

type Checked = { result: Json; events: Emitted } | { error: ErrorInfo }

function checkOutcome(
  ctx: EngineContext,
  effectType: string,
  settlement: Extract<Settlement, { kind: 'ok' }>,
): MaybePromise<Checked> {
  const checked = checkResult(ctx, settlement.result)
  if ('error' in checked) return checked
  if (settlement.emitted.length === 0) return { result: checked.value, events: [] }
  return checkEmitted(ctx, effectType, settlement.emitted).then(
    (events) => ({ result: checked.value, events }),
    (error) => ({ error: toErrorInfo(error) }),
  )
}

/** Events a handler emitted, resolved and validated as its module's (`effectType`'s) emits. */
async function checkEmitted(
  ctx: EngineContext,
  effectType: string,
  emitted: Emitted,
): Promise<Emitted> {
  const events: Emitted = []
  const emitter = ctx.registry.effectNamespaces.get(effectType)
  const max = ctx.options.maxEventBytes
  for (const event of emitted) {
    events.push(
      await validateEmittedEvent(
        ctx.registry,
        emitter,
        event.type,
        event.payload,
        max,
        'any-module',
      ),
    )
  }
  return events
}

/**
 * Records a failed attempt and, unless it was terminal or the policy is spent, the next
 * attempt's schedule (an interrupted attempt is retried at once). The error is made
 * recordable here, once.
 */
export function failAttempt(
  pass: Pass,
  effect: EffectRecord,
  attempt: number,
  error: { code: string; message: string },
  reason: 'error' | 'timeout' | 'terminal' | 'interrupted',
): void {
  const { ctx, batch } = pass
  const policy = resolveRetry(
    (effect.retry as RetryPolicy | undefined) ?? executorOf(ctx, pass.mem, effect)?.retry,
    effect.execution === 'inline' ? { ...resolveRetry(undefined), maxAttempts: 1 } : undefined,
  )
  const delay = reason === 'terminal' ? null : backoffDelay(policy, attempt + 1)
  const meta = { threadId: effect.threadId, effectId: effect.effectId }
  const recorded = recordableError(error, ctx.options.maxEventBytes)
  const runId = pass.fold.state.runId
  logAttemptFailed(ctx, runId, effect, attempt, recorded, reason, delay)
  batch.add(
    RT.effectFailed,
    { effectId: effect.effectId, attempt, error: recorded, final: delay === null, reason },
    meta,
  )
  if (delay === null) return
  const nextAttemptAt = batch.ts + (reason === 'interrupted' ? 0 : delay)
  ctx.observe({
    type: 'effect.retry',
    runId,
    effectId: effect.effectId,
    attempt: attempt + 1,
    nextAttemptAt,
  })
  batch.add(
    RT.effectRetryScheduled,
    {
      effectId: effect.effectId,
      attempt: attempt + 1,
      nextAttemptAt,
      reason: reason === 'interrupted' ? 'interrupted' : 'backoff',
    },
    meta,
  )
}
