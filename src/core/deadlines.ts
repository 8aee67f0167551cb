import { isTerminal } from './envelope.js'
import type { RunFold } from './fold/index.js'

/**
 * A local attempt in flight, or one waiting for its effect's flow control: both are this
 * process's to carry on, and due at once for whoever finds the run after it died.
 */
const inProcess = (status: string): boolean => status === 'started' || status === 'queued'

export interface Deadline {
  kind: 'timer' | 'retry' | 'effect-deadline' | 'interrupted-attempt' | 'run-deadline'
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
  if (isTerminal(fold.state.status)) return cancellationDeadlines(fold)
  const out: Deadline[] = []
  const { deadlineAt, rootThreadId } = fold.state
  if (deadlineAt !== undefined)
    out.push({ kind: 'run-deadline', at: deadlineAt, threadId: rootThreadId })
  for (const timerId in fold.timers) {
    const timer = fold.timers[timerId]
    const wait = fold.waits[timer.waitId]
    if (!wait) continue
    out.push({ kind: 'timer', at: timer.at, threadId: wait.threadId, waitId: wait.waitId })
  }
  for (const effectId in fold.effects) {
    const effect = fold.effects[effectId]
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
    } else if (includeStarted && inProcess(effect.status) && effect.execution !== 'worker') {
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

/**
 * A finished run keeps one kind of deadline: a worker effect whose cancellation is not yet
 * acknowledged becomes `ambiguous` when its cancellation timeout passes.
 */
function cancellationDeadlines(fold: RunFold): Deadline[] {
  const out: Deadline[] = []
  for (const effect of Object.values(fold.effects)) {
    if (!effect.cancelRequested || effect.deadlineAt === undefined) continue
    if (effect.status !== 'dispatched' && effect.status !== 'started') continue
    out.push({
      kind: 'effect-deadline',
      at: effect.deadlineAt,
      threadId: effect.threadId,
      effectId: effect.effectId,
    })
  }
  return out
}

export function nextDeadline(fold: RunFold, includeStarted = false): number | null {
  if (isTerminal(fold.state.status)) {
    let at: number | null = null
    for (const d of cancellationDeadlines(fold)) if (at === null || d.at < at) at = d.at
    return at
  }
  // The same rules as deadlinesOf, without building the list (this runs after every append).
  let min: number | null = fold.state.deadlineAt ?? null
  const consider = (at: number) => {
    if (min === null || at < min) min = at
  }
  for (const timerId in fold.timers) {
    const timer = fold.timers[timerId]
    if (fold.waits[timer.waitId]) consider(timer.at)
  }
  for (const effectId in fold.effects) {
    const effect = fold.effects[effectId]
    if (effect.status === 'retry_scheduled' && effect.nextAttemptAt !== undefined) {
      consider(effect.nextAttemptAt)
    } else if (effect.deadlineAt !== undefined) {
      consider(effect.deadlineAt)
    } else if (includeStarted && inProcess(effect.status) && effect.execution !== 'worker') {
      consider(0)
    }
  }
  return min
}
