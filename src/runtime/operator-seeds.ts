import { isTerminal } from '../core/envelope.js'
import {
  EffectNotFoundError,
  EffectNotRetryableError,
  InvalidInputError,
  RunNotFoundError,
} from '../core/errors.js'
import { allCommands, type RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import { RT } from '../core/runtime-events.js'
import { cancelSubtree } from './commands-apply.js'
import type { Seed } from './wake-pass.js'

// What an operator's cancel and retry record, checked against the run's fold: by the host that
// executes the run (operations.ts), and by a host without the run's version before it records
// the action for one with it (deferred-operations.ts, docs/deploys.md).

/**
 * What a cancel of `threadId` (the root by default) records, checked against `fold`; null when
 * the thread or run already ended. Also the check a host without the run's version makes
 * before it records the cancel for a host with it (deferred-inputs.ts).
 */
export function cancelSeed(fold: RunFold, threadId: string | undefined): Seed | null {
  const runId = fold.state.runId
  const target = threadId ?? fold.state.rootThreadId
  if (fold.state.status === 'queued' && target === fold.state.rootThreadId) {
    // Not admitted: no thread has started. It is never admitted now (its entry is forgotten).
    return ({ batch }) => {
      batch.add(RT.cancelRequested, { threadId: target }, { threadId: null, origin: 'operator' })
      batch.add(RT.runCancelled, { reason: 'cancelled' }, { threadId: null })
    }
  }
  const thread = fold.state.threads[target]
  if (!thread)
    throw new InvalidInputError(`run ${runId} has no thread ${target}`, { runId, threadId: target })
  if (isTerminal(fold.state.status) || isTerminal(thread.status)) return null
  return (pass) => {
    const meta = { threadId: target, origin: 'operator' as const }
    pass.batch.add(RT.cancelRequested, { threadId: target }, meta)
    cancelSubtree(pass, target, 'cancelled')
  }
}

/**
 * The effect an operator action names, from the run's fold: RUN_NOT_FOUND without the run,
 * EFFECT_NOT_RETRYABLE for an effect that already finished (its record folded away),
 * EFFECT_NOT_FOUND for an id the run never used.
 */
export function effectForOperator(runId: string, fold: RunFold | null, effectId: string) {
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
  return { runId, fold, effect }
}

const RETRYABLE = new Set(['ambiguous', 'failed', 'timed_out'])

/** What an operator retry records, checked against `fold` (also by a host without the version). */
export function retryEffectSeed(
  runId: string,
  fold: RunFold | null,
  effectId: string,
  caller: { identity?: Json },
): Seed {
  const { fold: run, effect } = effectForOperator(runId, fold, effectId)
  const cancelled =
    run.state.status === 'cancelled' || run.state.threads[effect.threadId]?.status === 'cancelled'
  if (!RETRYABLE.has(effect.status) || cancelled) {
    throw new EffectNotRetryableError(
      `effect ${effectId} is ${cancelled ? `${effect.status} in a cancelled thread` : effect.status}; only ambiguous, timed-out or finally failed effects of live threads can be retried`,
      { runId, effectId, status: effect.status },
    )
  }
  return ({ batch, now }) => {
    batch.add(
      RT.effectRetryScheduled,
      {
        effectId,
        attempt: effect.attempt + 1,
        nextAttemptAt: now,
        reason: 'operator',
        key: effect.key,
        by: caller.identity ?? null,
      },
      { threadId: effect.threadId, effectId, origin: 'operator' },
    )
  }
}
