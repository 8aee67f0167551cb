// Log lines for what went wrong in a run (docs/operations.md, "Logs"). Failures only: the
// hot path of a healthy run never builds a log entry.
import type { EffectRecord, RunFold } from '../core/fold/index.js'
import type { EngineContext } from './context.js'

/** A pass that failed its run. */
export function logRunFailed(ctx: EngineContext, fold: RunFold): void {
  const s = fold.state
  const error = s.error ?? { code: 'FAILED', message: 'failed' }
  ctx.log.error(
    {
      runId: s.runId,
      kind: s.kind,
      definitionName: s.definitionName,
      definitionVersion: s.definitionVersion,
      code: error.code,
      message: error.message,
    },
    `run ${s.runId} failed: ${error.code}: ${error.message}`,
  )
}

/** An attempt that failed, with whether and when it is retried. */
export function logAttemptFailed(
  ctx: EngineContext,
  runId: string,
  effect: EffectRecord,
  attempt: number,
  error: { code: string; message: string },
  reason: 'error' | 'timeout' | 'terminal' | 'interrupted',
  delay: number | null,
): void {
  const fields = {
    runId,
    effectId: effect.effectId,
    type: effect.type,
    attempt,
    reason,
    code: error.code,
    message: error.message,
  }
  if (delay === null) {
    ctx.log.warn(
      fields,
      `effect ${effect.type} of run ${runId} failed on attempt ${attempt}, not retried: ${error.message}`,
    )
  } else {
    const retryInMs = reason === 'interrupted' ? 0 : delay
    ctx.log.warn(
      { ...fields, retryInMs },
      `effect ${effect.type} of run ${runId} failed on attempt ${attempt} (${reason}); retrying in ${retryInMs} ms`,
    )
  }
}
