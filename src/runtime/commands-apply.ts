import type { Command } from '../core/commands.js'
import type { Definition, DefinitionRef } from '../core/definition.js'
import { definitionLabel } from '../core/definition.js'
import type { EffectDefinition } from '../core/effect.js'
import { isTerminal } from '../core/envelope.js'
import type { ErrorInfo } from '../core/errors.js'
import { toErrorInfo } from '../core/errors.js'
import { commandOf, threadContext } from '../core/fold.js'
import type { Json } from '../core/json.js'
import { type EffectRequestedPayload, RT, type WaitOn } from '../core/runtime-events.js'
import type { Batch } from './batch.js'
import type { EngineContext, RunMemory } from './context.js'
import {
  andThen,
  type MaybePromise,
  recordableError,
  requireJson,
  validateEmittedEvent,
  validateWith,
} from './validate.js'
import { requestWorkerCancel } from './worker-dispatch.js'

/**
 * Asks a thread's kind what it wants now and writes the new commands into the batch.
 * Synchronous unless a schema validates asynchronously (the hot path allocates no promises).
 */
export function decideThread(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  threadId: string,
): MaybePromise<void> {
  const fold = batch.fold
  const thread = fold.state.threads[threadId]
  const book = fold.books[threadId]
  if (!thread || !book || isTerminal(thread.status) || isTerminal(fold.state.status)) return
  const { kind, decideCtx } = threadContext(ctx.registry, fold, threadId)
  // A definition changed in place under the same version is refused before it decides.
  if (book.fingerprint !== undefined) ctx.fingerprints.check(fold, threadId, decideCtx.definition)
  let list: readonly Command[]
  try {
    list = kind.decide(book.kindState, decideCtx)
  } catch (error) {
    const info = toErrorInfo(error)
    return finishThread(ctx, mem, batch, threadId, 'failed', {
      code: 'DECIDE_FAILED',
      message: `${thread.kind} ${thread.definitionName}: decide threw: ${info.message}`,
    })
  }
  return applyFrom(ctx, mem, batch, threadId, list, 0)
}

function applyFrom(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  threadId: string,
  list: readonly Command[],
  from: number,
): MaybePromise<void> {
  for (let i = from; i < list.length; i++) {
    const current = batch.fold.state.threads[threadId]
    if (!current || isTerminal(current.status)) return
    const failure = applyCommand(ctx, mem, batch, threadId, list[i])
    if (failure instanceof Promise) {
      return failure.then((f) =>
        f
          ? finishThread(ctx, mem, batch, threadId, 'failed', f)
          : applyFrom(ctx, mem, batch, threadId, list, i + 1),
      )
    }
    if (failure) return finishThread(ctx, mem, batch, threadId, 'failed', failure)
  }
}

/** A run.started / thread.started payload with the definition's shape fingerprint, if any. */
export function withFingerprint<P extends Record<string, Json>>(
  ctx: EngineContext,
  definition: Definition,
  payload: P,
): P {
  const fingerprint = ctx.fingerprints.of(definition)
  if (fingerprint !== undefined)
    (payload as Record<string, Json>).definitionFingerprint = fingerprint
  return payload
}

/** Validates and cleans an input; failures become an ErrorInfo instead of a throw. */
function checkedInput(
  schema: Definition['input'],
  value: unknown,
  what: string,
  maxBytes: number,
): MaybePromise<{ input: Json; invalid?: ErrorInfo }> {
  const fail = (error: unknown) => ({ input: null, invalid: toErrorInfo(error) })
  const ok = (v: unknown) => {
    try {
      return { input: requireJson(v, what, maxBytes) }
    } catch (error) {
      return fail(error)
    }
  }
  try {
    const validated = validateWith(schema, value, what)
    return validated instanceof Promise ? validated.then(ok, fail) : ok(validated)
  } catch (error) {
    return fail(error)
  }
}

/** Applies one command; returns an error when the command itself is invalid (fails the thread). */
function applyCommand(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  threadId: string,
  command: Command,
): MaybePromise<ErrorInfo | undefined> {
  const book = batch.fold.books[threadId]
  const maxBytes = ctx.options.maxEventBytes
  switch (command.type) {
    case 'invoke': {
      const resolved = resolveEffect(ctx, command.effect)
      const existing = commandOf(book, command.key)
      if (existing) {
        if (existing.kind === 'invoke' && resolved.definition)
          mem.executors.set(existing.id, resolved.definition)
        return
      }
      const ephemeral = resolved.definition?.ephemeral === true
      const thread = ephemeral ? threadContext(ctx.registry, batch.fold, threadId) : null
      if (thread?.ephemeral?.has(command.key)) return
      if (!resolved.type) {
        return {
          code: 'EFFECT_NOT_FOUND',
          message:
            typeof command.effect === 'string'
              ? `effect type "${command.effect}" is not registered by any module`
              : 'an effect object passed to invoke must be registered in a module or carry a `type`',
        }
      }
      const definition = resolved.definition
      const type = resolved.type
      return andThen(
        checkedInput(definition?.input, command.input, `effect ${type} input`, maxBytes),
        ({ input, invalid }) => {
          const effectId = ctx.ids.effectId()
          const payload: EffectRequestedPayload = {
            effectId,
            threadId,
            type,
            input,
            key: command.key,
            execution: placement(ctx, type, definition),
          }
          if (command.retry) payload.retry = command.retry as Json
          if (command.timeoutMs !== undefined) payload.timeoutMs = command.timeoutMs
          if (definition) mem.executors.set(effectId, definition)
          if (thread && !invalid && payload.execution === 'inline') {
            // Recorded only if the attempt fails (see runEphemeral).
            batch.requestEphemeral(payload, thread)
            return undefined
          }
          batch.add(RT.effectRequested, payload, { threadId, effectId })
          if (invalid) {
            batch.add(
              RT.effectFailed,
              { effectId, attempt: 0, error: invalid, final: true, reason: 'terminal' },
              { threadId, effectId },
            )
          }
          return undefined
        },
      )
    }
    case 'spawn': {
      if (commandOf(book, command.key)) return
      const definition = resolveDefinition(ctx, command.definition)
      if (!definition) {
        return {
          code: 'DEFINITION_NOT_FOUND',
          message: `spawn: ${definitionLabel(command.definition)} is not registered`,
        }
      }
      const label = `${definitionLabel(definition)} input`
      return andThen(
        checkedInput(definition.input, command.input, label, maxBytes),
        ({ input, invalid }) => {
          const childId = ctx.ids.threadId()
          batch.add(
            RT.threadStarted,
            withFingerprint(ctx, definition, {
              threadId: childId,
              parentThreadId: threadId,
              kind: definition.kind,
              definitionName: definition.name,
              definitionVersion: definition.version,
              input,
              key: command.key,
            }),
            { threadId: childId },
          )
          if (invalid) finishThread(ctx, mem, batch, childId, 'failed', invalid)
          return undefined
        },
      )
    }
    case 'wait': {
      if (commandOf(book, command.key)) return
      const waitId = ctx.ids.waitId()
      const now = batch.ts
      const on = command.on
      let recorded: WaitOn
      let timerAt: number | undefined
      if ('timer' in on) {
        timerAt = 'at' in on.timer ? on.timer.at : now + on.timer.afterMs
        if (!Number.isFinite(timerAt))
          return { code: 'INVALID_WAIT', message: 'timer time must be finite' }
        recorded = { timer: { at: timerAt } }
      } else {
        const event: Extract<WaitOn, { event: unknown }>['event'] = { type: on.event.type }
        if (on.event.match !== undefined) event.match = on.event.match
        if (on.event.threadId !== undefined) event.threadId = on.event.threadId
        if (on.event.expect !== undefined) event.expect = on.event.expect
        timerAt = on.timeoutAt ?? (on.timeoutMs !== undefined ? now + on.timeoutMs : undefined)
        recorded = timerAt === undefined ? { event } : { event, timeoutAt: timerAt }
      }
      batch.add(
        RT.waitRegistered,
        { waitId, threadId, key: command.key, on: recorded },
        { threadId },
      )
      if (timerAt !== undefined) {
        batch.add(RT.timerSet, { timerId: ctx.ids.timerId(), waitId, at: timerAt }, { threadId })
      }
      return
    }
    case 'emit': {
      if (command.key !== undefined && commandOf(book, command.key)) return
      const add = (event: { type: string; payload: Json }) => {
        batch.add(event.type, event.payload, { threadId, key: command.key })
        return undefined
      }
      try {
        const kind = batch.fold.state.threads[threadId].kind
        const event = validateEmittedEvent(
          ctx.registry,
          ctx.registry.kindNamespaces.get(kind),
          command.event,
          command.payload,
          maxBytes,
          'any-module',
        )
        return event instanceof Promise ? event.then(add, toErrorInfo) : add(event)
      } catch (error) {
        return toErrorInfo(error)
      }
    }
    case 'cancel': {
      const record = commandOf(book, command.key)
      if (record?.status !== 'pending') return
      const reason = command.reason ?? 'cancelled by its thread'
      if (record.kind === 'invoke') cancelEffect(ctx, mem, batch, record.id, reason)
      if (record.kind === 'spawn') cancelSubtree(ctx, mem, batch, record.id, reason)
      return
    }
    case 'complete': {
      let output: Json
      try {
        output = requireJson(command.output, 'thread output', maxBytes)
      } catch (error) {
        return { ...toErrorInfo(error), code: 'INVALID_OUTPUT' }
      }
      finishThread(ctx, mem, batch, threadId, 'completed', output)
      return
    }
    case 'fail':
      finishThread(ctx, mem, batch, threadId, 'failed', command.error)
      return
    default:
      return { code: 'INVALID_COMMAND', message: `unknown command ${(command as any)?.type}` }
  }
}

function resolveEffect(
  ctx: EngineContext,
  effect: string | EffectDefinition,
): { type?: string; definition?: EffectDefinition } {
  if (typeof effect === 'string')
    return { type: ctx.registry.effectType(effect), definition: ctx.registry.effects.get(effect) }
  return { type: ctx.registry.effectType(effect), definition: effect }
}

function resolveDefinition(
  ctx: EngineContext,
  ref: Definition | DefinitionRef,
): Definition | undefined {
  return ctx.registry.resolveObject(ref as Definition) ?? ctx.registry.resolve(ref)
}

/** Where an effect runs (DESIGN §3 Workers): no handler, `execution: 'worker'` or `handles`. */
export function placement(
  ctx: EngineContext,
  type: string,
  definition: EffectDefinition | undefined,
): 'local' | 'inline' | 'worker' {
  if (definition?.execution === 'worker') return 'worker'
  const handles = ctx.worker?.handles
  if (handles && (typeof handles === 'function' ? handles(type) : handles.includes(type)))
    return 'worker'
  if (!definition?.execute) return 'worker'
  return definition.execution === 'inline' ? 'inline' : 'local'
}

/**
 * Cancels an effect that has not finished: aborts its in-process attempt and records it; a
 * worker attempt in flight gets `cancel.requested` and `worker.cancel` instead, and is settled
 * by the worker's answer or its cancellation timeout.
 */
export function cancelEffect(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  effectId: string,
  reason: string,
): void {
  const effect = batch.fold.effects[effectId]
  if (!effect || effect.status === 'failed' || effect.status === 'timed_out') return
  if (requestWorkerCancel(ctx, mem, batch, effect, reason)) return
  const running = mem.inflight.get(effectId)
  if (running) {
    running.abort(new Error(reason))
    mem.inflight.delete(effectId)
  }
  batch.add(
    RT.effectCancelled,
    { effectId, attempt: effect.attempt, reason },
    { threadId: effect.threadId, effectId },
  )
}

/** Cancels a thread and its descendants, deepest first, with their unfinished effects. */
export function cancelSubtree(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  threadId: string,
  reason: string,
): void {
  const fold = batch.fold
  const thread = fold.state.threads[threadId]
  if (!thread || isTerminal(thread.status)) return
  for (const child of childrenOf(batch, threadId)) cancelSubtree(ctx, mem, batch, child, reason)
  for (const effectId in fold.effects)
    if (fold.effects[effectId]?.threadId === threadId)
      cancelEffect(ctx, mem, batch, effectId, reason)
  batch.add(RT.threadCancelled, { threadId, reason }, { threadId })
  if (threadId === fold.state.rootThreadId && !isTerminal(fold.state.status))
    batch.add(RT.runCancelled, { reason }, { threadId: null })
}

/**
 * Completes or fails a thread: its unfinished children and effects are cancelled first
 * (structured concurrency), then the outcome is recorded; the root's outcome is the run's.
 */
export function finishThread(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  threadId: string,
  outcome: 'completed' | 'failed',
  value: Json | ErrorInfo,
): void {
  const fold = batch.fold
  const thread = fold.state.threads[threadId]
  if (!thread || isTerminal(thread.status)) return
  const reason = `thread ${outcome}`
  for (const child of childrenOf(batch, threadId)) cancelSubtree(ctx, mem, batch, child, reason)
  for (const effectId in fold.effects)
    if (fold.effects[effectId]?.threadId === threadId)
      cancelEffect(ctx, mem, batch, effectId, reason)
  const isRoot = threadId === fold.state.rootThreadId
  if (outcome === 'completed') {
    batch.add(RT.threadCompleted, { threadId, output: value as Json }, { threadId })
    if (isRoot) batch.add(RT.runCompleted, { output: value as Json }, { threadId: null })
  } else {
    const error = recordableError(value as ErrorInfo, ctx.options.maxEventBytes)
    batch.add(RT.threadFailed, { threadId, error }, { threadId })
    if (isRoot) batch.add(RT.runFailed, { error }, { threadId: null })
  }
}

function childrenOf(batch: Batch, threadId: string): string[] {
  const out: string[] = []
  const threads = batch.fold.state.threads
  for (const id in threads) {
    const thread = threads[id]
    if (thread.parentThreadId === threadId && !isTerminal(thread.status)) out.push(id)
  }
  return out
}
