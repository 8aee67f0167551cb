import type { Command } from '../core/commands.js'
import type { Definition, DefinitionRef } from '../core/definition.js'
import { definitionLabel } from '../core/definition.js'
import type { EffectDefinition } from '../core/effect.js'
import { isTerminal } from '../core/envelope.js'
import type { ErrorInfo } from '../core/errors.js'
import { toErrorInfo } from '../core/errors.js'
import { outcomeOf, threadContext } from '../core/fold.js'
import type { Json } from '../core/json.js'
import { RT } from '../core/runtime-events.js'
import type { Batch } from './batch.js'
import type { EngineContext, RunMemory } from './context.js'
import { requireJson, validateModuleEvent, validateWith } from './validate.js'

/** Asks a thread's kind what it wants now and writes the new commands into the batch. */
export async function decideThread(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  threadId: string,
): Promise<void> {
  const fold = batch.fold
  const thread = fold.state.threads[threadId]
  const book = fold.books[threadId]
  if (!thread || !book || isTerminal(thread.status) || isTerminal(fold.state.status)) return
  const { kind, ctx: kindCtx } = threadContext(ctx.registry, fold, threadId)
  let list: readonly Command[]
  try {
    list = kind.decide(book.kindState, {
      ...kindCtx,
      outcome: (key) => outcomeOf(book.commands[key]),
    })
  } catch (error) {
    const info = toErrorInfo(error)
    return finishThread(ctx, mem, batch, threadId, 'failed', {
      code: 'DECIDE_FAILED',
      message: `${thread.kind} ${thread.definitionName}: decide threw: ${info.message}`,
    })
  }
  for (const command of list) {
    const current = fold.state.threads[threadId]
    if (!current || isTerminal(current.status)) return
    const failure = await applyCommand(ctx, mem, batch, threadId, command)
    if (failure) return finishThread(ctx, mem, batch, threadId, 'failed', failure)
  }
}

/** Applies one command; returns an error when the command itself is invalid (fails the thread). */
async function applyCommand(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  threadId: string,
  command: Command,
): Promise<ErrorInfo | undefined> {
  const book = batch.fold.books[threadId]
  const maxBytes = ctx.options.maxEventBytes
  switch (command.type) {
    case 'invoke': {
      const resolved = resolveEffect(ctx, command.effect)
      const existing = book.commands[command.key]
      if (existing) {
        if (existing.kind === 'invoke' && resolved.definition)
          mem.executors.set(existing.id, resolved.definition)
        return
      }
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
      const effectId = ctx.ids.effectId()
      let input: Json
      let invalid: ErrorInfo | undefined
      try {
        const value = await validateWith(
          definition?.input,
          command.input,
          `effect ${resolved.type} input`,
        )
        input = requireJson(value, `effect ${resolved.type} input`, maxBytes)
      } catch (error) {
        invalid = toErrorInfo(error)
        input = null
      }
      const execution = placement(ctx, resolved.type, definition)
      const payload: Record<string, Json> = {
        effectId,
        threadId,
        type: resolved.type,
        input,
        key: command.key,
        execution,
      }
      if (command.retry) payload.retry = command.retry as Json
      if (command.timeoutMs !== undefined) payload.timeoutMs = command.timeoutMs
      if (definition) mem.executors.set(effectId, definition)
      batch.add(RT.effectRequested, payload, { threadId, effectId })
      if (invalid) {
        batch.add(
          RT.effectFailed,
          { effectId, attempt: 0, error: invalid, final: true, reason: 'terminal' },
          { threadId, effectId },
        )
      }
      return
    }
    case 'spawn': {
      if (book.commands[command.key]) return
      const definition = resolveDefinition(ctx, command.definition)
      if (!definition) {
        return {
          code: 'DEFINITION_NOT_FOUND',
          message: `spawn: ${definitionLabel(command.definition)} is not registered`,
        }
      }
      const childId = ctx.ids.threadId()
      let input: Json = null
      let invalid: ErrorInfo | undefined
      try {
        const value = await validateWith(
          definition.input,
          command.input,
          `${definitionLabel(definition)} input`,
        )
        input = requireJson(value, `${definitionLabel(definition)} input`, maxBytes)
      } catch (error) {
        invalid = toErrorInfo(error)
      }
      batch.add(
        RT.threadStarted,
        {
          threadId: childId,
          parentThreadId: threadId,
          kind: definition.kind,
          definitionName: definition.name,
          definitionVersion: definition.version,
          input,
          key: command.key,
        },
        { threadId: childId },
      )
      if (invalid) finishThread(ctx, mem, batch, childId, 'failed', invalid)
      return
    }
    case 'wait': {
      if (book.commands[command.key]) return
      const waitId = ctx.ids.waitId()
      const now = batch.ts
      const on = command.on
      let recorded: Json
      let timerAt: number | undefined
      if ('timer' in on) {
        timerAt = 'at' in on.timer ? on.timer.at : now + on.timer.afterMs
        if (!Number.isFinite(timerAt))
          return { code: 'INVALID_WAIT', message: 'timer time must be finite' }
        recorded = { timer: { at: timerAt } }
      } else {
        const event: Record<string, Json> = { type: on.event.type }
        if (on.event.match !== undefined) event.match = on.event.match
        if (on.event.threadId !== undefined) event.threadId = on.event.threadId
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
      if (command.key !== undefined && book.commands[command.key]) return
      try {
        const event = await validateModuleEvent(
          ctx.registry,
          command.event,
          command.payload,
          maxBytes,
          'module',
        )
        batch.add(event.type, event.payload, { threadId, key: command.key })
      } catch (error) {
        return toErrorInfo(error)
      }
      return
    }
    case 'cancel': {
      const record = book.commands[command.key]
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

/** Cancels an effect that has not finished: aborts its in-process attempt, records it. */
export function cancelEffect(
  ctx: EngineContext,
  mem: RunMemory,
  batch: Batch,
  effectId: string,
  reason: string,
): void {
  const effect = batch.fold.effects[effectId]
  if (!effect || effect.status === 'failed') return
  const running = mem.inflight.get(effectId)
  if (running) {
    running.abort.abort(new Error(reason))
    mem.inflight.delete(effectId)
  }
  if (effect.status === 'dispatched' && ctx.worker?.cancel) {
    const task = {
      runId: batch.fold.state.runId,
      effectId,
      attempt: effect.attempt,
      type: effect.type,
      input: effect.input,
    }
    const cancel = ctx.worker.cancel.bind(ctx.worker)
    batch.afterCommit.push(() => cancel(task))
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
  for (const effect of Object.values(fold.effects))
    if (effect.threadId === threadId) cancelEffect(ctx, mem, batch, effect.effectId, reason)
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
  for (const effect of Object.values(fold.effects))
    if (effect.threadId === threadId) cancelEffect(ctx, mem, batch, effect.effectId, reason)
  const isRoot = threadId === fold.state.rootThreadId
  if (outcome === 'completed') {
    batch.add(RT.threadCompleted, { threadId, output: value as Json }, { threadId })
    if (isRoot) batch.add(RT.runCompleted, { output: value as Json }, { threadId: null })
  } else {
    const error = value as unknown as Json
    batch.add(RT.threadFailed, { threadId, error }, { threadId })
    if (isRoot) batch.add(RT.runFailed, { error }, { threadId: null })
  }
}

function childrenOf(batch: Batch, threadId: string): string[] {
  const out: string[] = []
  for (const thread of Object.values(batch.fold.state.threads))
    if (thread.parentThreadId === threadId && !isTerminal(thread.status)) out.push(thread.threadId)
  return out
}
