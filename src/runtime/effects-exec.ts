import type { EffectContext } from '../core/effect.js'
import { isTerminal } from '../core/envelope.js'
import { type ErrorInfo, TerminalError, toErrorInfo } from '../core/errors.js'
import { type EffectRecord, requestedEffect } from '../core/fold.js'
import type { Json } from '../core/json.js'
import { backoffDelay, type RetryPolicy, resolveRetry } from '../core/retry.js'
import { RT } from '../core/runtime-events.js'
import type { Batch, EphemeralRequest } from './batch.js'
import type { EngineContext, Execution, RunMemory, Settlement } from './context.js'
import { logAttemptFailed } from './log-events.js'
import {
  andThen,
  jsonWithin,
  type MaybePromise,
  recordableError,
  validateEmittedEvent,
} from './validate.js'
import { recordWorkerNotice, WorkerNotice } from './worker-dispatch.js'

/** Effects of `mode` that may start an attempt now: newly requested or with a retry due. */
export function runnableEffects(
  batch: Batch,
  mem: RunMemory,
  now: number,
  mode: 'local' | 'inline' | 'worker',
): EffectRecord[] {
  const out: EffectRecord[] = []
  if (isTerminal(batch.fold.state.status)) return out
  const effects = batch.fold.effects
  for (const effectId in effects) {
    const effect = effects[effectId]
    if (isRunnable(batch, mem, now, mode, effect)) out.push(effect)
  }
  return out
}

export function hasRunnable(
  batch: Batch,
  mem: RunMemory,
  now: number,
  mode: 'local' | 'inline' | 'worker',
): boolean {
  if (isTerminal(batch.fold.state.status)) return false
  const effects = batch.fold.effects
  for (const effectId in effects)
    if (isRunnable(batch, mem, now, mode, effects[effectId])) return true
  return false
}

function isRunnable(
  batch: Batch,
  mem: RunMemory,
  now: number,
  mode: 'local' | 'inline' | 'worker',
  effect: EffectRecord,
): boolean {
  if (effect.execution !== mode || mem.inflight.has(effect.effectId)) return false
  const due =
    effect.status === 'requested' ||
    (effect.status === 'retry_scheduled' && (effect.nextAttemptAt ?? 0) <= now)
  if (!due) return false
  const thread = batch.fold.state.threads[effect.threadId]
  return thread !== undefined && !isTerminal(thread.status)
}

const NEVER_ABORTED = new AbortController()

/**
 * What a handler gets beside its input. Its functions are getters on the prototype, made on
 * first read (most handlers use none of them), and still work destructured: `{ emit }`.
 */
class HandlerContext implements EffectContext {
  readonly effectId: string
  readonly threadId: string
  private emitFn: EffectContext['emit'] | undefined
  private publishFn: EffectContext['publish'] | undefined
  constructor(
    private readonly ctx: EngineContext,
    readonly runId: string,
    effect: EffectRecord,
    readonly attempt: number,
    private readonly emitted: Array<{ type: string; payload: Json }>,
    private readonly signalOf: () => AbortSignal,
  ) {
    this.effectId = effect.effectId
    this.threadId = effect.threadId
  }
  /** Most handlers never look at it, so most attempts make no AbortController. */
  get signal(): AbortSignal {
    return this.signalOf()
  }
  get emit(): EffectContext['emit'] {
    this.emitFn ??= (type: string, payload: Json = null): void => {
      this.emitted.push({ type, payload })
    }
    return this.emitFn
  }
  get effectType(): EffectContext['effectType'] {
    return this.ctx.registry.effectTypeOf
  }
  get publish(): EffectContext['publish'] {
    this.publishFn ??= (type: string, payload: Json = null): void => {
      const { runId, threadId, effectId } = this
      this.ctx.publishTransient({ runId, threadId, effectId, type, payload })
    }
    return this.publishFn
  }
}

const effectContext = (
  ctx: EngineContext,
  runId: string,
  effect: EffectRecord,
  attempt: number,
  emitted: Array<{ type: string; payload: Json }>,
  signal: () => AbortSignal,
): EffectContext => new HandlerContext(ctx, runId, effect, attempt, emitted, signal)

const executorOf = (ctx: EngineContext, mem: RunMemory, effect: EffectRecord) =>
  mem.executors.get(effect.effectId) ?? ctx.registry.effects.get(effect.type)

/**
 * Runs an inline attempt: synchronously when its handler is synchronous and it cannot time
 * out (no promise, no microtask), else like any attempt.
 */
export function executeInline(
  ctx: EngineContext,
  mem: RunMemory,
  runId: string,
  effect: EffectRecord,
  attempt: number,
): MaybePromise<Settlement> {
  const definition = executorOf(ctx, mem, effect)
  if (!definition?.execute || (effect.timeoutMs ?? definition.timeoutMs)) {
    return execute(ctx, mem, runId, effect, attempt).done
  }
  const emitted: Array<{ type: string; payload: Json }> = []
  const effectCtx = effectContext(ctx, runId, effect, attempt, emitted, () => NEVER_ABORTED.signal)
  try {
    const result = definition.execute(effect.input, effectCtx)
    if (result instanceof Promise) {
      return result.then(
        (value): Settlement => ({ kind: 'ok', result: value, emitted }),
        (error): Settlement => ({ kind: 'error', error }),
      )
    }
    return { kind: 'ok', result, emitted }
  } catch (error) {
    return { kind: 'error', error }
  }
}

/**
 * Runs one attempt of `effect` and resolves with how it ended; never rejects. The handler's
 * AbortSignal fires on cancellation and on timeout.
 */
export function execute(
  ctx: EngineContext,
  mem: RunMemory,
  runId: string,
  effect: EffectRecord,
  attempt: number,
): { execution: Execution; done: Promise<Settlement> } {
  const definition = executorOf(ctx, mem, effect)
  const timeoutMs = effect.timeoutMs ?? definition?.timeoutMs
  let controller: AbortController | undefined
  let abortedWith: Error | undefined
  const execution: Execution = {
    effectId: effect.effectId,
    attempt,
    abort(reason) {
      abortedWith ??= reason
      controller?.abort(reason)
    },
  }
  const emitted: Array<{ type: string; payload: Json }> = []
  const effectCtx = effectContext(ctx, runId, effect, attempt, emitted, () => {
    if (!controller) {
      controller = new AbortController()
      if (abortedWith) controller.abort(abortedWith)
    }
    return controller.signal
  })
  if (ctx.observing)
    ctx.observe({ type: 'effect.attempt', runId, effectId: effect.effectId, attempt })
  const done = new Promise<Settlement>((resolve) => {
    let timer: unknown
    const finish = (settlement: Settlement) => {
      if (execution.settled) return
      execution.settled = settlement
      if (timer !== undefined) ctx.clock.clearTimeout(timer)
      resolve(settlement)
    }
    if (timeoutMs !== undefined && timeoutMs > 0) {
      timer = ctx.clock.setTimeout(() => {
        ctx.observe({ type: 'effect.timeout', runId, effectId: effect.effectId, attempt })
        finish({ kind: 'timeout' })
        execution.abort(new Error(`effect attempt timed out after ${timeoutMs} ms`))
      }, timeoutMs)
    }
    if (!definition?.execute) {
      finish({
        kind: 'error',
        error: new TerminalError(`no in-process handler for effect type "${effect.type}"`),
      })
      return
    }
    const run = definition.execute
    Promise.resolve()
      .then(() => run(effect.input, effectCtx))
      .then(
        (result) => finish({ kind: 'ok', result, emitted }),
        (error) => finish({ kind: 'error', error }),
      )
  })
  return { execution, done }
}

/**
 * Runs an ephemeral inline attempt (attempt 1). A JSON result with no emitted events records
 * nothing: it becomes the thread's outcome for the command's key until the iteration stops
 * deciding, and the thread is decided again. Any other ending records the effect's request and
 * this attempt's outcome, and the effect goes on as a recorded inline effect.
 */
export function runEphemeral(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  { payload, thread: runtime }: EphemeralRequest,
): MaybePromise<void> {
  const state = batch.fold.state
  const thread = state.threads[payload.threadId]
  if (isTerminal(state.status) || !thread || isTerminal(thread.status)) {
    mem.executors.delete(payload.effectId)
    return
  }
  const effect = requestedEffect(payload)
  const settle = (settlement: Settlement): MaybePromise<void> => {
    if (settlement.kind === 'ok' && settlement.emitted.length === 0) {
      // A result the log could not hold is recorded as a failed attempt (checkOutcome).
      const checked = checkResult(ctx, settlement.result)
      if ('value' in checked) {
        mem.executors.delete(payload.effectId)
        runtime.ephemeral?.set(payload.key, { status: 'completed', value: checked.value })
        batch.dirty.add(payload.threadId)
        return
      }
    }
    const meta = { threadId: payload.threadId, effectId: payload.effectId }
    batch.add(RT.effectRequested, payload, meta)
    return recordSettlement(ctx, mem, batch, payload.effectId, 1, settlement)
  }
  const settlement = executeInline(ctx, mem, state.runId, effect, 1)
  return settlement instanceof Promise ? settlement.then(settle) : settle(settlement)
}

/**
 * Records how an attempt ended: emitted events and the result atomically, or the failure and
 * (policy permitting) the next attempt's schedule. Stale outcomes (the effect moved on, e.g.
 * it was cancelled) record nothing.
 */
export function recordSettlement(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  effectId: string,
  attempt: number,
  settlement: Settlement,
): MaybePromise<void> {
  const effect = batch.fold.effects[effectId]
  if (!effect) return
  if (effect.execution !== 'inline') {
    if (effect.attempt !== attempt) return
    if (effect.status !== 'started' && effect.status !== 'dispatched') return
  }
  if (settlement.kind === 'error' && settlement.error instanceof WorkerNotice)
    return recordWorkerNotice(ctx, mem, batch, effect, attempt, settlement.error)
  const meta = { threadId: effect.threadId, effectId }
  if (settlement.kind === 'ok') {
    return andThen(checkOutcome(ctx, effect.type, settlement), (recorded) => {
      if ('error' in recorded) {
        return failAttempt(ctx, mem, batch, effect, attempt, recorded.error, 'terminal')
      }
      for (const event of recorded.events) batch.add(event.type, event.payload, meta)
      batch.add(RT.effectCompleted, { effectId, attempt, result: recorded.result }, meta)
    })
  }
  if (settlement.kind === 'timeout') {
    batch.add(RT.effectTimedOut, { effectId, attempt }, meta)
    return failAttempt(
      ctx,
      mem,
      batch,
      effect,
      attempt,
      { code: 'TIMED_OUT', message: 'effect attempt timed out' },
      'timeout',
    )
  }
  const terminal = TerminalError.is(settlement.error)
  return failAttempt(
    ctx,
    mem,
    batch,
    effect,
    attempt,
    toErrorInfo(settlement.error),
    terminal ? 'terminal' : 'error',
  )
}

type Checked =
  | { result: Json; events: Array<{ type: string; payload: Json }> }
  | { error: ErrorInfo }

/**
 * An attempt's result as the log will hold it: JSON and at most `maxEventBytes` serialized
 * (the limit of every event, checked before anything is written), or why not.
 */
function checkResult(ctx: EngineContext, result: unknown): { value: Json } | { error: ErrorInfo } {
  const max = ctx.options.maxEventBytes
  const checked = jsonWithin(result, max)
  if (checked.ok) return { value: checked.value }
  const message =
    'problem' in checked
      ? `effect result is not JSON: ${checked.problem.message} at ${checked.problem.path}`
      : `effect result is ${checked.bytes} bytes, over the limit of ${max} (limits.maxEventBytes)`
  return { error: { code: 'INVALID_RESULT', message } }
}

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
  emitted: Array<{ type: string; payload: Json }>,
): Promise<Array<{ type: string; payload: Json }>> {
  const events: Array<{ type: string; payload: Json }> = []
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

export function failAttempt(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  effect: EffectRecord,
  attempt: number,
  error: { code: string; message: string },
  reason: 'error' | 'timeout' | 'terminal' | 'interrupted',
): void {
  const policy = resolveRetry(
    (effect.retry as RetryPolicy | undefined) ?? executorOf(ctx, mem, effect)?.retry,
    effect.execution === 'inline' ? { ...resolveRetry(undefined), maxAttempts: 1 } : undefined,
  )
  const delay = reason === 'terminal' ? null : backoffDelay(policy, attempt + 1)
  const meta = { threadId: effect.threadId, effectId: effect.effectId }
  const recorded = recordableError(error, ctx.options.maxEventBytes)
  logAttemptFailed(ctx, batch, effect, attempt, recorded, reason, delay)
  batch.add(
    RT.effectFailed,
    { effectId: effect.effectId, attempt, error: recorded, final: delay === null, reason },
    meta,
  )
  if (delay === null) return
  const nextAttemptAt = batch.ts + (reason === 'interrupted' ? 0 : delay)
  ctx.observe({
    type: 'effect.retry',
    runId: batch.fold.state.runId,
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
