// Running effect handlers in this process. Nothing here writes to the log: a run of a handler
// ends in a Settlement, which a pass records (attempt-outcomes.ts).
import type { EffectContext, EffectDefinition } from '../core/effect.js'
import { TerminalError } from '../core/errors.js'
import type { EffectRecord } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import {
  type EffectPermit,
  type EngineContext,
  type Execution,
  type RunMemory,
  reportBack,
  type Settlement,
} from './context.js'
import type { MaybePromise } from './validate.js'
import { hasWaitUrl, mintWaitUrls } from './wait-urls.js'

const NEVER_ABORTED = new AbortController()
const neverAborted = () => NEVER_ABORTED.signal

type Emitted = Array<{ type: string; payload: Json }>

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
    private readonly emitted: Emitted,
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

/** The definition that runs `effect`: the one its kind named, else the registered one. */
export const executorOf = (
  ctx: EngineContext,
  mem: RunMemory,
  effect: EffectRecord,
): EffectDefinition | undefined =>
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
  if (
    !definition?.execute ||
    (effect.timeoutMs ?? definition.timeoutMs) ||
    (ctx.waitUrls && hasWaitUrl(effect.input))
  ) {
    return execute(ctx, definition, runId, effect, attempt).done
  }
  const emitted: Emitted = []
  const handlerCtx = new HandlerContext(ctx, runId, effect, attempt, emitted, neverAborted)
  try {
    const result = definition.execute(effect.input, handlerCtx)
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
  definition: EffectDefinition | undefined,
  runId: string,
  effect: EffectRecord,
  attempt: number,
  seq?: number,
): { execution: Execution; done: Promise<Settlement> } {
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
  const emitted: Emitted = []
  const handlerCtx = new HandlerContext(ctx, runId, effect, attempt, emitted, () => {
    if (!controller) {
      controller = new AbortController()
      if (abortedWith) controller.abort(abortedWith)
    }
    return controller.signal
  })
  if (ctx.observing) {
    const { effectId, threadId, type: effectType } = effect
    ctx.observe({ type: 'effect.attempt', runId, effectId, threadId, effectType, attempt, seq })
  }
  const done = new Promise<Settlement>((resolve) => {
    let timer: unknown
    const finish = (settlement: Settlement) => {
      if (execution.settled) return
      execution.settled = settlement
      if (ctx.observing) observeSettled(ctx, runId, effect, attempt, settlement)
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
    // A `waitUrl(key)` in the input becomes a fresh URL for the handler only (wait-urls.ts).
    const input =
      ctx.waitUrls && hasWaitUrl(effect.input)
        ? mintWaitUrls(ctx, runId, effect.threadId, effect.input)
        : effect.input
    Promise.resolve(input)
      .then((value) => run(value, handlerCtx))
      .then(
        (result) => finish({ kind: 'ok', result, emitted }),
        (error) => finish({ kind: 'error', error }),
      )
  })
  return { execution, done }
}

/** Runs an attempt whose start is durable; its settlement is recorded by the next pass. */
export function launchAttempt(
  ctx: EngineContext,
  mem: RunMemory,
  runId: string,
  effect: EffectRecord,
  attempt: number,
  seq?: number,
  permit?: EffectPermit,
): void {
  const definition = executorOf(ctx, mem, effect)
  const { execution, done } = execute(ctx, definition, runId, effect, attempt, seq)
  mem.inflight.set(effect.effectId, execution)
  done.then(() => {
    // Its slot frees as the handler ends, before the outcome is recorded: what the limit
    // bounds is handlers running at once.
    if (permit) ctx.effectLimits?.release(permit)
    if (mem.inflight.get(effect.effectId) !== execution) return
    mem.inflight.delete(effect.effectId)
    mem.settled.push(execution)
    reportBack(ctx, mem, runId)
  })
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

/** How an in-process attempt ended (an observer ends the attempt's span with it). */
function observeSettled(
  ctx: EngineContext,
  runId: string,
  effect: EffectRecord,
  attempt: number,
  settlement: Settlement,
): void {
  const { effectId, threadId, type: effectType } = effect
  const outcome = settlement.kind
  const error =
    settlement.kind === 'error'
      ? String((settlement.error as Error)?.message ?? settlement.error)
      : undefined
  ctx.observe({
    type: 'effect.settled',
    runId,
    effectId,
    threadId,
    effectType,
    attempt,
    outcome,
    error,
  })
}
