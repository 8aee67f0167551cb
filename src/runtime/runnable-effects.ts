import { isTerminal } from '../core/envelope.js'
import type { EffectRecord } from '../core/fold.js'
import type { EffectExecution } from '../core/runtime-events.js'
import type { Pass } from './context.js'

/** Effects run `mode`-wise that may start an attempt now: newly requested or with a retry due. */
export function runnableEffects(pass: Pass, mode: EffectExecution): EffectRecord[] {
  const out: EffectRecord[] = []
  if (isTerminal(pass.fold.state.status)) return out
  const effects = pass.fold.effects
  for (const effectId in effects) {
    const effect = effects[effectId]
    if (isRunnable(pass, mode, effect)) out.push(effect)
  }
  return out
}

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
    (effect.status === 'retry_scheduled' && (effect.nextAttemptAt ?? 0) <= pass.now)
  if (!due) return false
  const thread = pass.fold.state.threads[effect.threadId]
  return thread !== undefined && !isTerminal(thread.status)
}
