import type { RunState } from '../core/envelope.js'
import { isTerminal } from '../core/envelope.js'
import { InvalidInputError, RunNotFoundError } from '../core/errors.js'
import { type RunFold, viewState } from '../core/fold.js'
import { RT } from '../core/runtime-events.js'
import type { EngineContext, RunMemory } from './context.js'
import { recordSettlement } from './effects-exec.js'
import type { WorkerCallbackInput } from './options.js'
import { wakePass } from './wake.js'

const KINDS = new Set(['started', 'heartbeat', 'complete', 'fail', 'cancelled'])

/**
 * A worker reports on a dispatched attempt. Callbacks for a stale attempt, a finished effect,
 * an in-process effect or a finished run are ignored: nothing is written.
 */
export async function workerCallbackOp(
  ctx: EngineContext,
  mem: RunMemory,
  runId: string,
  fold: RunFold | null,
  input: WorkerCallbackInput,
): Promise<RunState> {
  if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
  if (
    !input ||
    typeof input.effectId !== 'string' ||
    !Number.isInteger(input.attempt) ||
    !KINDS.has(input.kind)
  ) {
    throw new InvalidInputError(
      'worker callback needs { effectId, attempt (integer), kind: started|heartbeat|complete|fail|cancelled }',
    )
  }
  const effect = fold.effects[input.effectId]
  const live =
    effect &&
    effect.execution === 'worker' &&
    effect.attempt === input.attempt &&
    (effect.status === 'dispatched' || effect.status === 'started') &&
    !isTerminal(fold.state.status)
  if (!live) return viewState(fold)
  const meta = { threadId: effect.threadId, effectId: effect.effectId, origin: 'worker' as const }
  const result = await wakePass(ctx, mem, fold, async (batch) => {
    switch (input.kind) {
      case 'started':
        batch.add(
          RT.effectAttemptStarted,
          { effectId: effect.effectId, attempt: input.attempt },
          meta,
        )
        return
      case 'heartbeat':
        batch.add(
          RT.effectHeartbeat,
          { effectId: effect.effectId, attempt: input.attempt, deadlineAt: null },
          meta,
        )
        return
      case 'complete':
        await recordSettlement(ctx, mem, batch, effect.effectId, input.attempt, {
          kind: 'ok',
          result: input.result ?? null,
          emitted: (input.events ?? []).map((e) => ({ type: e.type, payload: e.payload ?? null })),
        })
        return
      case 'fail': {
        const message =
          typeof input.error === 'string'
            ? input.error
            : (input.error?.message ?? 'worker reported failure')
        const error = Object.assign(new Error(message), { code: 'WORKER_FAILED' })
        await recordSettlement(ctx, mem, batch, effect.effectId, input.attempt, {
          kind: 'error',
          error:
            input.retryable === false
              ? { ...error, [Symbol.for('skein.error')]: true, code: 'TERMINAL', message }
              : error,
        })
        return
      }
      case 'cancelled':
        if (effect.cancelRequested) {
          batch.add(RT.effectCancelled, { effectId: effect.effectId, attempt: input.attempt }, meta)
        }
        return
    }
  })
  return result.state
}
