// The decide rounds of one wake iteration: dirty threads decide, their commands are written,
// the inline attempts they ask for run, their outcomes make threads dirty again, until nothing
// changes. One of the two loops that stay synchronous until user code returns a promise
// (validate.ts, MaybePromise).
import type { Command } from '../core/commands.js'
import { isTerminal } from '../core/envelope.js'
import { type ErrorInfo, toErrorInfo } from '../core/errors.js'
import { type EffectRecord, requestedEffect, threadContext } from '../core/fold/index.js'
import { type EffectExecution, RT } from '../core/runtime-events.js'
import { checkResult, recordSettlement } from './attempt-outcomes.js'
import type { EphemeralRequest } from './batch.js'
import { applyCommand, finishThread } from './commands-apply.js'
import type { Pass, Settlement } from './context.js'
import { executeInline } from './effect-runner.js'
import { andThen, type MaybePromise } from './validate.js'

/** Decide rounds within one iteration before it is committed (bounds runaway emit loops). */
const MAX_DECIDE_ROUNDS = 64

/**
 * Decides dirty threads and runs the inline attempts they ask for, round after round, until
 * nothing changes (or the round cap: the threads left dirty carry to the next iteration).
 * Ephemeral outcomes live only as long as these rounds.
 */
export function decideRounds(pass: Pass): MaybePromise<void> {
  let pending: MaybePromise<void>
  try {
    pending = roundsFrom(pass, 0)
  } catch (error) {
    pass.batch.endEphemeral()
    throw error
  }
  if (pending instanceof Promise) return pending.finally(() => pass.batch.endEphemeral())
  pass.batch.endEphemeral()
}

function roundsFrom(pass: Pass, from: number): MaybePromise<void> {
  const batch = pass.batch
  for (let round = from; ; round++) {
    if (isTerminal(pass.fold.state.status)) return
    if (batch.dirty.size === 0 && !hasRunnable(pass, 'inline')) return
    if (round >= MAX_DECIDE_ROUNDS) {
      for (const threadId of batch.dirty) pass.mem.carryDirty.add(threadId)
      return
    }
    const pending = decideRound(pass)
    if (pending instanceof Promise) return pending.then(() => roundsFrom(pass, round + 1))
  }
}

/** One round: the dirty threads decide, then the inline and ephemeral attempts they asked for run. */
function decideRound(pass: Pass): MaybePromise<void> {
  const threads = pass.batch.takeDirty()
  const deciding = eachInOrder(pass, threads, decideThread, undefined)
  if (deciding instanceof Promise) return deciding.then(() => runRoundAttempts(pass))
  return runRoundAttempts(pass)
}

function runRoundAttempts(pass: Pass): MaybePromise<void> {
  const inline = eachInOrder(pass, runnableEffects(pass, 'inline'), runInline, undefined)
  if (inline instanceof Promise) return inline.then(() => runEphemeralAttempts(pass))
  return runEphemeralAttempts(pass)
}

function runEphemeralAttempts(pass: Pass): MaybePromise<void> {
  const ephemeral = pass.batch.takeEphemeral()
  if (ephemeral) return eachInOrder(pass, ephemeral, runEphemeral, undefined)
}

/** Asks a thread's kind what it wants now and writes the new commands into the batch. */
function decideThread(pass: Pass, threadId: string): MaybePromise<void> {
  const { ctx, fold } = pass
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
    return finishThread(pass, threadId, 'failed', {
      code: 'DECIDE_FAILED',
      message: `${thread.kind} ${thread.definitionName}: decide threw: ${info.message}`,
    })
  }
  return eachInOrder(pass, list, applyInThread, threadId)
}

/** One command of a thread that is still live; an invalid command fails the thread. */
function applyInThread(pass: Pass, command: Command, threadId: string): MaybePromise<void> {
  const current = pass.fold.state.threads[threadId]
  if (!current || isTerminal(current.status)) return
  const failure = applyCommand(pass, threadId, command)
  if (failure instanceof Promise) return failure.then((f) => failThread(pass, threadId, f))
  return failThread(pass, threadId, failure)
}

const failThread = (pass: Pass, threadId: string, failure: ErrorInfo | undefined): void => {
  if (failure) finishThread(pass, threadId, 'failed', failure)
}

function runInline(pass: Pass, effect: EffectRecord): MaybePromise<void> {
  const attempt = effect.attempt + 1
  const runId = pass.fold.state.runId
  const settlement = executeInline(pass.ctx, pass.mem, runId, effect, attempt)
  if (settlement instanceof Promise) {
    return settlement.then((s) => recordSettlement(pass, effect.effectId, attempt, s))
  }
  return recordSettlement(pass, effect.effectId, attempt, settlement)
}

/**
 * Runs an ephemeral inline attempt (attempt 1). A JSON result with no emitted events records
 * nothing: it becomes the thread's outcome for the command's key until the iteration stops
 * deciding, and the thread is decided again. Any other ending records the effect's request and
 * this attempt's outcome, and the effect goes on as a recorded inline effect.
 */
function runEphemeral(
  pass: Pass,
  { payload, thread: runtime }: EphemeralRequest,
): MaybePromise<void> {
  const { mem, fold } = pass
  const state = fold.state
  const thread = state.threads[payload.threadId]
  if (isTerminal(state.status) || !thread || isTerminal(thread.status)) {
    mem.executors.delete(payload.effectId)
    return
  }
  const effect = requestedEffect(payload)
  const settle = (settlement: Settlement): MaybePromise<void> => {
    if (settlement.kind === 'ok' && settlement.emitted.length === 0) {
      // A result the log could not hold is recorded as a failed attempt (recordSettlement).
      const checked = checkResult(pass.ctx, settlement.result)
      if ('value' in checked) {
        mem.executors.delete(payload.effectId)
        runtime.ephemeral?.set(payload.key, { status: 'completed', value: checked.value })
        pass.batch.dirty.add(payload.threadId)
        return
      }
    }
    const meta = { threadId: payload.threadId, effectId: payload.effectId }
    pass.batch.add(RT.effectRequested, payload, meta)
    return recordSettlement(pass, payload.effectId, 1, settlement)
  }
  return andThen(executeInline(pass.ctx, mem, state.runId, effect, 1), settle)
}

/** Effects run `mode`-wise that may start an attempt now: newly requested or with a retry due. */
export function runnableEffects(pass: Pass, mode: EffectExecution): readonly EffectRecord[] {
  if (isTerminal(pass.fold.state.status)) return NONE_RUNNABLE
  let out: EffectRecord[] | undefined
  const effects = pass.fold.effects
  for (const effectId in effects) {
    const effect = effects[effectId]
    if (isRunnable(pass, mode, effect)) (out ??= []).push(effect)
  }
  return out ?? NONE_RUNNABLE
}

/** What most rounds find runnable: one shared empty list, not a new array per round. */
const NONE_RUNNABLE: readonly EffectRecord[] = Object.freeze([])

export function hasRunnable(pass: Pass, mode: EffectExecution): boolean {
  if (isTerminal(pass.fold.state.status)) return false
  const effects = pass.fold.effects
  for (const effectId in effects) if (isRunnable(pass, mode, effects[effectId])) return true
  return false
}

function isRunnable(pass: Pass, mode: EffectExecution, effect: EffectRecord): boolean {
  if (effect.execution !== mode || pass.mem.inflight.has(effect.effectId)) return false
  const due =
    effect.status === 'requested' ||
    effect.status === 'queued' ||
    (effect.status === 'retry_scheduled' && (effect.nextAttemptAt ?? 0) <= pass.now)
  if (!due) return false
  const thread = pass.fold.state.threads[effect.threadId]
  return thread !== undefined && !isTerminal(thread.status)
}

/** One item's work (module-level functions: no closure per call). */
type Step<T, X> = (pass: Pass, item: T, extra: X) => MaybePromise<void>

/**
 * Runs `step(pass, item, extra)` over `items` in order: synchronously until a step returns a
 * promise, then the rest chained after it. The rounds, their threads, each thread's commands
 * and the attempts of a round all go through it.
 */
function eachInOrder<T, X>(
  pass: Pass,
  items: readonly T[],
  step: Step<T, X>,
  extra: X,
  from = 0,
): MaybePromise<void> {
  for (let i = from; i < items.length; i++) {
    const pending = step(pass, items[i], extra)
    if (pending instanceof Promise) {
      return pending.then(() => eachInOrder(pass, items, step, extra, i + 1))
    }
  }
}
