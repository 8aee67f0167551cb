// An operator acts on a worker attempt that is stuck in a worker's hands (docs/workers.md,
// "Stuck attempts"): requeue it (a new attempt at once) or fail it (the retry policy decides).
import { isTerminal } from '../core/envelope.js'
import { EffectNotRetryableError } from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import { RT } from '../core/runtime-events.js'
import { failAttempt } from './attempt-outcomes.js'
import type { EngineContext } from './context.js'
import { effectForOperator } from './operator-seeds.js'
import type { Seed, SeedWriter } from './wake-pass.js'
import { cancelAfterCommit } from './worker-dispatch.js'

/** What the operator does with the stuck attempt. */
export type StuckAttemptAction = 'requeue' | 'fail'

/**
 * Ends the effect's current worker attempt (status `dispatched` or `started`), recorded
 * `runtime.effect.failed` (`OPERATOR_FAILED` or `OPERATOR_REQUEUED`); its task is dropped if no worker took it,
 * and a late callback for it is stale. `fail`: the retry policy decides (a new attempt, or a
 * final failure). `requeue`: a new attempt is dispatched at once whatever the policy says.
 * Anything else (not a worker effect, not in a worker's hands, the run finished) is refused
 * with EFFECT_NOT_RETRYABLE and nothing is written.
 */
export async function releaseStuckAttemptOp(
  writer: SeedWriter,
  fold: RunFold | null,
  effectId: string,
  action: StuckAttemptAction,
  caller: { identity?: Json },
): Promise<void> {
  await writer.pass(fold!, releaseStuckAttemptSeed(writer.runId, fold, effectId, action, caller))
}

/**
 * What a requeue or fail of a stuck attempt records, checked against `fold` (refused as
 * `releaseStuckAttemptOp` says). Also the check a host without the run's version makes before
 * it records the action for a host with it (deferred-operations.ts).
 */
export function releaseStuckAttemptSeed(
  runId: string,
  fold: RunFold | null,
  effectId: string,
  action: StuckAttemptAction,
  caller: { identity?: Json },
): Seed {
  const { fold: run, effect } = effectForOperator(runId, fold, effectId)
  const inHands = effect.status === 'dispatched' || effect.status === 'started'
  if (effect.execution !== 'worker' || !inHands || isTerminal(run.state.status)) {
    throw new EffectNotRetryableError(
      `effect ${effectId} is ${effect.execution === 'worker' ? effect.status : `${effect.execution}, not a worker effect`}${isTerminal(run.state.status) ? ` in a ${run.state.status} run` : ''}; only a worker attempt that is dispatched or started can be requeued or failed`,
      { runId, effectId, status: effect.status },
    )
  }
  if (effect.cancelRequested) {
    throw new EffectNotRetryableError(
      `effect ${effectId} has a cancel request pending; it settles by the worker's answer or its cancellation timeout`,
      { runId, effectId, status: effect.status },
    )
  }
  const attempt = effect.attempt
  const by = caller.identity ?? null
  return (pass) => {
    cancelAfterCommit(pass, effect)
    const meta = { threadId: effect.threadId, effectId, origin: 'operator' as const }
    if (action === 'fail') {
      const error = {
        code: 'OPERATOR_FAILED',
        message: `an operator failed worker attempt ${attempt} (it was ${effect.status})`,
      }
      failAttempt(pass, effect, attempt, error, 'error')
      return
    }
    const error = {
      code: 'OPERATOR_REQUEUED',
      message: `an operator requeued worker attempt ${attempt} (it was ${effect.status})`,
    }
    pass.batch.add(
      RT.effectFailed,
      { effectId, attempt, error, final: false, reason: 'interrupted' },
      meta,
    )
    pass.batch.add(
      RT.effectRetryScheduled,
      {
        effectId,
        attempt: attempt + 1,
        nextAttemptAt: pass.now,
        reason: 'operator',
        key: effect.key,
        by,
      },
      meta,
    )
  }
}

/** A worker attempt in a worker's hands that nothing will time out. */
export interface UndeadlinedAttempt {
  runId: string
  effectId: string
  type: string
  attempt: number
  status: string
}

/**
 * The run's worker attempts `dispatched` or `started` with no deadline: nothing times them out,
 * so if their worker is gone they wait for an operator (`requeueEffect`, `failEffect`).
 */
export function undeadlinedAttempts(runId: string, fold: RunFold): UndeadlinedAttempt[] {
  const found: UndeadlinedAttempt[] = []
  for (const effect of Object.values(fold.effects)) {
    if (effect.execution !== 'worker' || effect.deadlineAt !== undefined) continue
    if (effect.status !== 'dispatched' && effect.status !== 'started') continue
    const { effectId, type, attempt, status } = effect
    found.push({ runId, effectId, type, attempt, status })
  }
  return found
}

/** Warns (boot log) about worker attempts in a worker's hands that no deadline bounds. */
export function warnUndeadlinedAttempts(
  ctx: Pick<EngineContext, 'log'>,
  stuck: readonly UndeadlinedAttempt[],
): void {
  if (stuck.length === 0) return
  ctx.log.warn(
    { attempts: stuck.length, first: stuck.slice(0, 10) },
    `${stuck.length} worker attempt(s) are dispatched or started with no deadline: nothing times them out. If their worker is gone, requeue or fail them (skein requeue <runId> <effectId> [--fail], docs/workers.md "Stuck attempts"); give worker effects scheduleToStartMs and startToCloseMs`,
  )
}
