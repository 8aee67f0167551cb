// The decide rounds of one wake iteration: dirty threads decide, the inline attempts they ask
// for run, their outcomes make threads dirty again, until nothing changes. This is one of the
// two loops that stay synchronous until user code returns a promise (maybe-promise.ts).
import { isTerminal } from '../core/envelope.js'
import { type EffectRecord, requestedEffect } from '../core/fold.js'
import type { Json } from '../core/json.js'
import { RT } from '../core/runtime-events.js'
import { checkResult, recordSettlement } from './attempt-outcomes.js'
import type { EphemeralRequest } from './batch.js'
import { decideThread } from './commands-apply.js'
import { executorOf, type Pass, type Settlement } from './context.js'
import { executeInline } from './effect-runner.js'
import { andThen, eachInOrder, type MaybePromise } from './maybe-promise.js'
import { hasRunnable, runnableEffects } from './runnable-effects.js'

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
    const pending = eachInOrder(pass, ROUND, runPhase, undefined)
    if (pending instanceof Promise) return pending.then(() => roundsFrom(pass, round + 1))
  }
}

type Phase = (pass: Pass) => MaybePromise<void>
const runPhase = (pass: Pass, phase: Phase) => phase(pass)

const decideDirtyThreads: Phase = (pass) => {
  const threads = [...pass.batch.dirty]
  pass.batch.dirty.clear()
  return eachInOrder(pass, threads, decideThread, undefined)
}

const runInlineAttempts: Phase = (pass) =>
  eachInOrder(pass, runnableEffects(pass, 'inline'), runInline, undefined)

const runEphemeralAttempts: Phase = (pass) => {
  const ephemeral = pass.batch.takeEphemeral()
  if (ephemeral) return eachInOrder(pass, ephemeral, runEphemeral, undefined)
}

/** One round: the dirty threads decide, then the inline and ephemeral attempts they asked for run. */
const ROUND: readonly Phase[] = [decideDirtyThreads, runInlineAttempts, runEphemeralAttempts]

function runInline(pass: Pass, effect: EffectRecord): MaybePromise<void> {
  const attempt = effect.attempt + 1
  const definition = executorOf(pass.ctx, pass.mem, effect)
  const runId = pass.fold.state.runId
  const settlement = executeInline(pass.ctx, definition, runId, effect, attempt)
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
    pass.batch.add(RT.effectRequested, payload as unknown as Json, meta)
    return recordSettlement(pass, payload.effectId, 1, settlement)
  }
  const definition = executorOf(pass.ctx, mem, effect)
  return andThen(executeInline(pass.ctx, definition, state.runId, effect, 1), settle)
}
