// A thread's commands become runtime events in the pass's batch, and threads end: completed or
// failed by their kind, or cancelled (by their parent, by an operator, by a finishing thread).
// Part of the decide rounds (decide-rounds.ts): synchronous unless a schema answers later.
import {
  checkRunAttributes,
  MAX_RUN_ATTRIBUTES,
  mergeAttributes,
  type RunAttributeValue,
} from '../core/attributes.js'
import type { Command } from '../core/commands.js'
import type { Definition, DefinitionRef } from '../core/definition.js'
import { definitionLabel } from '../core/definition.js'
import type { EffectDefinition } from '../core/effect.js'
import { isTerminal } from '../core/envelope.js'
import type { ErrorInfo } from '../core/errors.js'
import { toErrorInfo } from '../core/errors.js'
import { commandOf, type ThreadRuntime, threadContext } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import {
  type EffectExecution,
  type EffectRequestedPayload,
  RT,
  type WaitOn,
} from '../core/runtime-events.js'
import type { EngineContext, Pass } from './context.js'
import {
  andThen,
  type MaybePromise,
  recordableError,
  requireJson,
  validateEmittedEvent,
  validateWith,
} from './validate.js'
import { requestWorkerCancel } from './worker-dispatch.js'

/** Validates and cleans an input; failures become an ErrorInfo instead of a throw. */
interface CheckedInput {
  input: Json
  invalid?: ErrorInfo
}

function checkedInput(
  schema: Definition['input'],
  value: unknown,
  what: string,
  maxBytes: number,
): MaybePromise<CheckedInput> {
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
export function applyCommand(
  pass: Pass,
  threadId: string,
  command: Command,
): MaybePromise<ErrorInfo | undefined> {
  switch (command.type) {
    case 'invoke':
      return applyInvoke(pass, threadId, command)
    case 'spawn':
      return applySpawn(pass, threadId, command)
    case 'wait':
      return applyWait(pass, threadId, command)
    case 'emit':
      return applyEmit(pass, threadId, command)
    case 'cancel': {
      const record = commandOf(pass.fold.books[threadId], command.key)
      if (record?.status !== 'pending') return
      const reason = command.reason ?? 'cancelled by its thread'
      if (record.kind === 'invoke') cancelEffect(pass, record.id, reason)
      if (record.kind === 'spawn') cancelSubtree(pass, record.id, reason)
      return
    }
    case 'attributes':
      return applyAttributes(pass, threadId, command.set)
    case 'complete': {
      let output: Json
      try {
        output = requireJson(command.output, 'thread output', pass.ctx.options.maxEventBytes)
      } catch (error) {
        return { ...toErrorInfo(error), code: 'INVALID_OUTPUT' }
      }
      finishThread(pass, threadId, 'completed', output)
      return
    }
    case 'fail':
      finishThread(pass, threadId, 'failed', command.error)
      return
    default:
      return { code: 'INVALID_COMMAND', message: `unknown command ${(command as any)?.type}` }
  }
}

function applyInvoke(
  pass: Pass,
  threadId: string,
  command: Extract<Command, { type: 'invoke' }>,
): MaybePromise<ErrorInfo | undefined> {
  const { ctx, mem } = pass
  const definition = effectDefinition(ctx, command.effect)
  const existing = commandOf(pass.fold.books[threadId], command.key)
  if (existing) {
    if (existing.kind === 'invoke' && definition) mem.executors.set(existing.id, definition)
    return
  }
  const ephemeral = definition?.ephemeral === true
  const thread = ephemeral ? threadContext(ctx.registry, pass.fold, threadId) : null
  if (thread?.ephemeral?.has(command.key)) return
  const type = ctx.registry.effectType(command.effect)
  if (!type) {
    return {
      code: 'EFFECT_NOT_FOUND',
      message:
        typeof command.effect === 'string'
          ? `effect type "${command.effect}" is not registered by any module`
          : 'an effect object passed to invoke must be registered in a module or carry a `type`',
    }
  }
  const schema = definition?.input
  // No schema: checked at once, with no closure for a later answer (most effects).
  if (!schema) {
    const checked = checkedJson(command.input, type, ctx.options.maxEventBytes)
    return recordInvoke(pass, threadId, command, definition, type, thread, checked)
  }
  const checking = checkedInput(
    schema,
    command.input,
    `effect ${type} input`,
    ctx.options.maxEventBytes,
  )
  return andThen(checking, (checked) =>
    recordInvoke(pass, threadId, command, definition, type, thread, checked),
  )
}

/** An effect input with no schema, as the log holds it (or why it cannot). */
function checkedJson(value: unknown, type: string, maxBytes: number): CheckedInput {
  try {
    return { input: requireJson(value, `effect ${type} input`, maxBytes) }
  } catch (error) {
    return { input: null, invalid: toErrorInfo(error) }
  }
}

/** Records an invoke whose input was checked: its request, or (ephemeral) its pending attempt. */
function recordInvoke(
  pass: Pass,
  threadId: string,
  command: Extract<Command, { type: 'invoke' }>,
  definition: EffectDefinition | undefined,
  type: string,
  thread: ThreadRuntime | null,
  { input, invalid }: CheckedInput,
): undefined {
  const { ctx, mem, batch } = pass
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
    // Recorded only if the attempt fails (see decide-rounds.ts, runEphemeral).
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
}

function applySpawn(
  pass: Pass,
  threadId: string,
  command: Extract<Command, { type: 'spawn' }>,
): MaybePromise<ErrorInfo | undefined> {
  const { ctx, batch } = pass
  if (commandOf(pass.fold.books[threadId], command.key)) return
  const definition = resolveDefinition(ctx, command.definition)
  if (!definition) {
    return {
      code: 'DEFINITION_NOT_FOUND',
      message: `spawn: ${definitionLabel(command.definition)} is not registered`,
    }
  }
  const label = `${definitionLabel(definition)} input`
  const checking = checkedInput(definition.input, command.input, label, ctx.options.maxEventBytes)
  return andThen(checking, ({ input, invalid }) => {
    const childId = ctx.ids.threadId()
    batch.add(
      RT.threadStarted,
      ctx.fingerprints.stamp(definition, {
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
    if (invalid) finishThread(pass, childId, 'failed', invalid)
    return undefined
  })
}

function applyWait(
  pass: Pass,
  threadId: string,
  command: Extract<Command, { type: 'wait' }>,
): ErrorInfo | undefined {
  const { ctx, batch } = pass
  if (commandOf(pass.fold.books[threadId], command.key)) return
  const waitId = ctx.ids.waitId()
  const now = pass.now
  const on = command.on
  let recorded: WaitOn
  let timerAt: number | undefined
  if ('timer' in on) {
    timerAt = 'at' in on.timer ? on.timer.at : now + on.timer.afterMs
    if (!Number.isFinite(timerAt))
      return { code: 'INVALID_WAIT', message: 'timer time must be finite' }
    recorded = { timer: { at: timerAt } }
  } else if ('url' in on) {
    const url: { input?: string } = {}
    if (typeof on.url?.input === 'string') url.input = on.url.input
    timerAt = on.timeoutAt ?? (on.timeoutMs !== undefined ? now + on.timeoutMs : undefined)
    recorded = timerAt === undefined ? { url } : { url, timeoutAt: timerAt }
  } else {
    const event: Extract<WaitOn, { event: unknown }>['event'] = { type: on.event.type }
    if (on.event.match !== undefined) event.match = on.event.match
    if (on.event.threadId !== undefined) event.threadId = on.event.threadId
    if (on.event.expect !== undefined) event.expect = on.event.expect
    timerAt = on.timeoutAt ?? (on.timeoutMs !== undefined ? now + on.timeoutMs : undefined)
    recorded = timerAt === undefined ? { event } : { event, timeoutAt: timerAt }
  }
  batch.add(RT.waitRegistered, { waitId, threadId, key: command.key, on: recorded }, { threadId })
  if (timerAt !== undefined) {
    batch.add(RT.timerSet, { timerId: ctx.ids.timerId(), waitId, at: timerAt }, { threadId })
  }
}

function applyEmit(
  pass: Pass,
  threadId: string,
  command: Extract<Command, { type: 'emit' }>,
): MaybePromise<ErrorInfo | undefined> {
  const { ctx, batch } = pass
  if (command.key !== undefined && commandOf(pass.fold.books[threadId], command.key)) return
  let event: MaybePromise<{ type: string; payload: Json }>
  try {
    const kind = pass.fold.state.threads[threadId].kind
    event = validateEmittedEvent(
      ctx.registry,
      ctx.registry.kindNamespaces.get(kind),
      command.event,
      command.payload,
      ctx.options.maxEventBytes,
      'any-module',
    )
  } catch (error) {
    return toErrorInfo(error)
  }
  // A closure only for a schema that answers later (most emits are checked at once).
  if (event instanceof Promise) {
    return event.then((checked) => {
      batch.add(checked.type, checked.payload, { threadId, key: command.key })
      return undefined
    }, toErrorInfo)
  }
  batch.add(event.type, event.payload, { threadId, key: command.key })
  return undefined
}

/**
 * Records the attributes a thread sets when they change the run's (checked against what the
 * run's definition declares; a bad one fails the thread with INVALID_ATTRIBUTES).
 */
function applyAttributes(
  pass: Pass,
  threadId: string,
  set: Record<string, RunAttributeValue | null>,
): ErrorInfo | undefined {
  const state = pass.fold.state
  const definition = pass.ctx.registry.resolve({
    kind: state.kind,
    name: state.definitionName,
    version: state.definitionVersion,
  })
  let changes: Record<string, RunAttributeValue | null>
  try {
    changes = checkRunAttributes(`run ${state.runId}`, definition?.attributes, set, true)
  } catch (error) {
    return { ...toErrorInfo(error), code: 'INVALID_ATTRIBUTES' }
  }
  const current = state.attributes ?? {}
  for (const [name, value] of Object.entries(changes)) {
    if (value === null ? !(name in current) : current[name] === value) delete changes[name]
  }
  const next = mergeAttributes(state.attributes, changes)
  if (Object.keys(next ?? {}).length > MAX_RUN_ATTRIBUTES) {
    return {
      code: 'INVALID_ATTRIBUTES',
      message: `a run has at most ${MAX_RUN_ATTRIBUTES} attributes`,
    }
  }
  if (Object.keys(changes).length > 0) {
    pass.batch.add(RT.runAttributes, { attributes: changes }, { threadId })
  }
  return undefined
}

/** The definition an invoke runs: the registered one, or the object it passed. */
function effectDefinition(
  ctx: EngineContext,
  effect: string | EffectDefinition,
): EffectDefinition | undefined {
  if (typeof effect === 'string') return ctx.registry.effects.get(effect)
  // An object that a registered effect stands in for (a test's fake) runs the stand-in.
  const type = ctx.registry.effectType(effect)
  return (type && ctx.registry.effects.get(type)) || effect
}

function resolveDefinition(
  ctx: EngineContext,
  ref: Definition | DefinitionRef,
): Definition | undefined {
  return ctx.registry.resolveObject(ref as Definition) ?? ctx.registry.resolve(ref)
}

/** Where an effect runs (docs/workers.md): no handler, `execution: 'worker'` or `handles`. */
function placement(
  ctx: EngineContext,
  type: string,
  definition: EffectDefinition | undefined,
): EffectExecution {
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
export function cancelEffect(pass: Pass, effectId: string, reason: string): void {
  const effect = pass.fold.effects[effectId]
  if (!effect || effect.status === 'failed' || effect.status === 'timed_out') return
  if (requestWorkerCancel(pass, effect, reason)) return
  const running = pass.mem.inflight.get(effectId)
  if (running) {
    running.abort(new Error(reason))
    pass.mem.inflight.delete(effectId)
  }
  pass.batch.add(
    RT.effectCancelled,
    { effectId, attempt: effect.attempt, reason },
    { threadId: effect.threadId, effectId },
  )
}

/** Cancels a thread and its descendants, deepest first, with their unfinished effects. */
export function cancelSubtree(pass: Pass, threadId: string, reason: string): void {
  const fold = pass.fold
  const thread = fold.state.threads[threadId]
  if (!thread || isTerminal(thread.status)) return
  endChildrenAndEffects(pass, threadId, reason)
  pass.batch.add(RT.threadCancelled, { threadId, reason }, { threadId })
  if (threadId === fold.state.rootThreadId && !isTerminal(fold.state.status))
    pass.batch.add(RT.runCancelled, { reason }, { threadId: null })
}

/**
 * Completes or fails a thread: its unfinished children and effects are cancelled first
 * (structured concurrency), then the outcome is recorded; the root's outcome is the run's.
 */
export function finishThread(
  pass: Pass,
  threadId: string,
  outcome: 'completed' | 'failed',
  value: Json | ErrorInfo,
): void {
  const fold = pass.fold
  const thread = fold.state.threads[threadId]
  if (!thread || isTerminal(thread.status)) return
  endChildrenAndEffects(pass, threadId, `thread ${outcome}`)
  const isRoot = threadId === fold.state.rootThreadId
  if (outcome === 'completed') {
    pass.batch.add(RT.threadCompleted, { threadId, output: value as Json }, { threadId })
    if (isRoot) pass.batch.add(RT.runCompleted, { output: value as Json }, { threadId: null })
  } else {
    const max = pass.ctx.options.maxEventBytes
    const error = recordableError(value as ErrorInfo, max)
    pass.batch.add(RT.threadFailed, { threadId, error }, { threadId })
    if (isRoot) pass.batch.add(RT.runFailed, { error }, { threadId: null })
  }
}

function endChildrenAndEffects(pass: Pass, threadId: string, reason: string): void {
  const fold = pass.fold
  for (const child of childrenOf(pass, threadId)) cancelSubtree(pass, child, reason)
  for (const effectId in fold.effects)
    if (fold.effects[effectId]?.threadId === threadId) cancelEffect(pass, effectId, reason)
}

function childrenOf(pass: Pass, threadId: string): string[] {
  const out: string[] = []
  const threads = pass.fold.state.threads
  for (const id in threads) {
    const thread = threads[id]
    if (thread.parentThreadId === threadId && !isTerminal(thread.status)) out.push(id)
  }
  return out
}
