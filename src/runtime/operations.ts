import type { Definition } from '../core/definition.js'
import type { EventInput } from '../core/envelope.js'
import { isTerminal } from '../core/envelope.js'
import {
  EffectNotFoundError,
  EffectNotRetryableError,
  InvalidEventError,
  InvalidInputError,
  RunNotFoundError,
  StartConflictError,
} from '../core/errors.js'
import { allCommands, emptyFold, type RunFold } from '../core/fold.js'
import { canonicalJson, type Json } from '../core/json.js'
import { RT } from '../core/runtime-events.js'
import { cancelSubtree, withFingerprint } from './commands-apply.js'
import type { EngineContext, RunMemory } from './context.js'
import type { CallerContext, StartOptions } from './engine-types.js'
import { requireJson, validateSignalEvents, validateWith } from './validate.js'
import { wakePass } from './wake.js'

interface PreparedStart {
  definition: Definition
  input: Json
}

/** Start: validate before anything is written; create the run or recognise a retry of it. */
export const startOp = {
  async prepare(
    ctx: EngineContext,
    definition: Definition,
    input: unknown,
  ): Promise<PreparedStart> {
    const label = `${definition.kind} ${definition.name}@${definition.version} input`
    const value = await validateWith(definition.input, input, label)
    return { definition, input: requireJson(value, label, ctx.options.maxEventBytes) }
  },

  async run(
    ctx: EngineContext,
    mem: RunMemory,
    runId: string,
    fold: RunFold | null,
    prepared: PreparedStart,
    options: StartOptions,
  ): Promise<{ threadId: string }> {
    const { definition, input } = prepared
    if (fold) {
      const mismatched: string[] = []
      if (fold.state.kind !== definition.kind) mismatched.push('kind')
      if (fold.state.definitionName !== definition.name) mismatched.push('definitionName')
      if (fold.state.definitionVersion !== definition.version) mismatched.push('definitionVersion')
      if (canonicalJson(fold.startInput) !== canonicalJson(input)) mismatched.push('input')
      if (fold.startKey !== options.idempotencyKey) mismatched.push('idempotencyKey')
      if (options.threadId !== undefined && options.threadId !== fold.state.rootThreadId)
        mismatched.push('threadId')
      if (mismatched.length > 0) {
        throw new StartConflictError(
          `run ${runId} already exists with a different ${mismatched.join(', ')}`,
          { runId, fields: mismatched },
        )
      }
      return { threadId: fold.state.rootThreadId }
    }
    const threadId = options.threadId ?? ctx.ids.threadId()
    const fresh = emptyFold(runId)
    mem.fold = fresh
    ctx.observe({
      type: 'run.started',
      runId,
      kind: definition.kind,
      definitionName: definition.name,
    })
    await wakePass(
      ctx,
      mem,
      fresh,
      (batch) => {
        batch.idempotencyKey = options.idempotencyKey
        batch.add(
          RT.runStarted,
          withFingerprint(ctx, definition, {
            kind: definition.kind,
            definitionName: definition.name,
            definitionVersion: definition.version,
            input,
            rootThreadId: threadId,
          }),
          { threadId: null, origin: 'external', idempotencyKey: options.idempotencyKey },
        )
        batch.add(
          RT.threadStarted,
          withFingerprint(ctx, definition, {
            threadId,
            parentThreadId: null,
            kind: definition.kind,
            definitionName: definition.name,
            definitionVersion: definition.version,
            input,
          }),
          { threadId },
        )
      },
      'input',
    )
    return { threadId }
  },
}

type PreparedSignal = Array<{ type: string; payload: Json; threadId?: string }>

/** Signal: validated before the queue; a repeated key is a no-op, also after trims. */
export const signalOp = {
  prepare(ctx: EngineContext, events: readonly EventInput[]): Promise<PreparedSignal> {
    return validateSignalEvents(ctx.registry, events, ctx.options.maxEventBytes)
  },

  async run(
    ctx: EngineContext,
    mem: RunMemory,
    runId: string,
    fold: RunFold | null,
    events: PreparedSignal,
    idempotencyKey: string | undefined,
  ): Promise<void> {
    if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
    if (idempotencyKey !== undefined && fold.signalKeys[idempotencyKey] !== undefined) {
      return
    }
    for (const event of events) {
      if (event.threadId !== undefined && !fold.state.threads[event.threadId]) {
        throw new InvalidEventError(`run ${runId} has no thread ${event.threadId}`, {
          runId,
          threadId: event.threadId,
        })
      }
    }
    await wakePass(
      ctx,
      mem,
      fold,
      (batch) => {
        batch.idempotencyKey = idempotencyKey
        events.forEach((event, i) => {
          batch.add(event.type, event.payload, {
            threadId: event.threadId ?? null,
            origin: 'external',
            idempotencyKey: i === 0 ? idempotencyKey : undefined,
          })
        })
      },
      'input',
    )
  },
}

/** Cancel: recorded, then the thread and its descendants are cancelled deepest first. */
export async function cancelOp(
  ctx: EngineContext,
  mem: RunMemory,
  runId: string,
  fold: RunFold | null,
  threadId: string | undefined,
): Promise<void> {
  if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
  const target = threadId ?? fold.state.rootThreadId
  const thread = fold.state.threads[target]
  if (!thread)
    throw new InvalidInputError(`run ${runId} has no thread ${target}`, { runId, threadId: target })
  if (isTerminal(fold.state.status) || isTerminal(thread.status)) return
  await wakePass(ctx, mem, fold, (batch) => {
    batch.add(RT.cancelRequested, { threadId: target }, { threadId: target, origin: 'operator' })
    cancelSubtree(ctx, mem, batch, target, 'cancelled')
  })
}

const RETRYABLE = new Set(['ambiguous', 'failed', 'timed_out'])

/**
 * Operator retry of one effect from `ambiguous`, a timeout or a final failure. A final failure
 * that failed its thread and run re-opens them (the fold does that on `reason: 'operator'`).
 */
export async function retryEffectOp(
  ctx: EngineContext,
  mem: RunMemory,
  runId: string,
  fold: RunFold | null,
  effectId: string,
  caller: CallerContext,
): Promise<void> {
  if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
  const effect = fold.effects[effectId]
  if (!effect) {
    const known = Object.values(fold.books).some((book) =>
      allCommands(book).some((c) => c.kind === 'invoke' && c.id === effectId),
    )
    if (known) {
      throw new EffectNotRetryableError(`effect ${effectId} already finished`, { runId, effectId })
    }
    throw new EffectNotFoundError(`run ${runId} has no effect ${effectId}`, { runId, effectId })
  }
  const cancelled =
    fold.state.status === 'cancelled' || fold.state.threads[effect.threadId]?.status === 'cancelled'
  if (!RETRYABLE.has(effect.status) || cancelled) {
    throw new EffectNotRetryableError(
      `effect ${effectId} is ${cancelled ? `${effect.status} in a cancelled thread` : effect.status}; only ambiguous, timed-out or finally failed effects of live threads can be retried`,
      { runId, effectId, status: effect.status },
    )
  }
  await wakePass(ctx, mem, fold, (batch) => {
    batch.add(
      RT.effectRetryScheduled,
      {
        effectId,
        attempt: effect.attempt + 1,
        nextAttemptAt: batch.ts,
        reason: 'operator',
        key: effect.key,
        by: caller.identity ?? null,
      },
      { threadId: effect.threadId, effectId, origin: 'operator' },
    )
  })
}
