import { isTerminal } from './envelope.js'
import type { RunFold } from './fold.js'

export interface Deadline {
  kind: 'timer' | 'retry' | 'effect-deadline' | 'interrupted-attempt'
  at: number
  threadId: string
  waitId?: string
  effectId?: string
}

/**
 * The durable deadlines of a run, from its fold: open timers, scheduled retries and worker
 * deadlines. With `includeStarted`, local attempts in flight count as due at once: after a
 * crash they must be found and re-attempted (used for the stored `nextDeadlineAt`).
 */
export function deadlinesOf(fold: RunFold, includeStarted = false): Deadline[] {
  if (isTerminal(fold.state.status)) return []
  const out: Deadline[] = []
  for (const timer of Object.values(fold.timers)) {
    const wait = fold.waits[timer.waitId]
    if (!wait) continue
    out.push({ kind: 'timer', at: timer.at, threadId: wait.threadId, waitId: wait.waitId })
  }
  for (const effect of Object.values(fold.effects)) {
    if (effect.status === 'retry_scheduled' && effect.nextAttemptAt !== undefined) {
      out.push({
        kind: 'retry',
        at: effect.nextAttemptAt,
        threadId: effect.threadId,
        effectId: effect.effectId,
      })
    } else if (effect.deadlineAt !== undefined) {
      out.push({
        kind: 'effect-deadline',
        at: effect.deadlineAt,
        threadId: effect.threadId,
        effectId: effect.effectId,
      })
    } else if (includeStarted && effect.status === 'started' && effect.execution !== 'worker') {
      out.push({
        kind: 'interrupted-attempt',
        at: 0,
        threadId: effect.threadId,
        effectId: effect.effectId,
      })
    }
  }
  return out
}

export function nextDeadline(fold: RunFold, includeStarted = false): number | null {
  let min: number | null = null
  for (const d of deadlinesOf(fold, includeStarted)) if (min === null || d.at < min) min = d.at
  return min
}
