import type { ThreadState } from '../envelope.js'
import { RT, type WorkerDeadline, type WorkerTimeouts } from '../runtime-events.js'
import { type EffectRecord, requestedEffect } from './effect-record.js'
import type { FoldCases, RunFold } from './run-fold.js'
import { setCommand } from './thread-book.js'
import { setThread, settleCommand } from './thread-records.js'

// The effect family: `runtime.effect.*`. The fold tracks an effect from its request until it
// completes or is cancelled (then its outcome lives in the thread's command record); failed and
// ambiguous effects stay for operators.

export const effectCases: FoldCases = {
  [RT.effectRequested]: (fold, event) => {
    const r = event.payload
    fold.effects[r.effectId] = requestedEffect(r)
    const book = fold.books[r.threadId]
    if (book) setCommand(book, r.key, { kind: 'invoke', id: r.effectId, status: 'pending' })
  },
  [RT.effectAttemptStarted]: (fold, event) => {
    const p = event.payload
    patchEffect(fold, p.effectId, { status: 'started', attempt: p.attempt })
    if (p.deadlineAt !== undefined) foldWorkerTiming(fold, p)
  },
  [RT.effectDispatched]: (fold, event) => {
    const p = event.payload
    patchEffect(fold, p.effectId, {
      status: 'dispatched',
      attempt: p.attempt,
      deadlineAt: p.deadlineAt ?? undefined,
    })
    // A new attempt: nothing of the previous one's start or cancel request carries over.
    if (fold.effects[p.effectId]) {
      delete fold.effects[p.effectId].closeAt
      delete fold.effects[p.effectId].cancelRequested
    }
    foldWorkerTiming(fold, p)
  },
  [RT.effectHeartbeat]: (fold, event) => {
    const p = event.payload
    patchEffect(fold, p.effectId, { deadlineAt: p.deadlineAt ?? undefined })
    foldWorkerTiming(fold, p)
  },
  [RT.effectCompleted]: (fold, event) => {
    const p = event.payload
    const effect = fold.effects[p.effectId]
    if (!effect) return
    // Completed effects leave the fold: their result lives in the command record.
    delete fold.effects[p.effectId]
    settleCommand(fold, effect.threadId, effect.key, {
      status: 'completed',
      value: p.result ?? null,
    })
  },
  [RT.effectFailed]: (fold, event) => {
    const f = event.payload
    const effect = fold.effects[f.effectId]
    if (!effect) return
    effect.lastError = f.error
    delete effect.deadlineAt
    if (f.final) {
      effect.status = f.reason === 'timeout' ? 'timed_out' : 'failed'
      settleCommand(fold, effect.threadId, effect.key, { status: 'failed', error: f.error })
    }
  },
  [RT.effectTimedOut]: (fold, event) => {
    const p = event.payload
    const effect = fold.effects[p.effectId]
    if (!effect) return
    effect.lastError = { code: 'TIMED_OUT', message: p.message ?? 'effect attempt timed out' }
    delete effect.deadlineAt
  },
  [RT.effectRetryScheduled]: (fold, event) => {
    const p = event.payload
    const effect = fold.effects[p.effectId]
    if (!effect) return
    effect.status = 'retry_scheduled'
    effect.attempt = p.attempt - 1
    effect.nextAttemptAt = p.nextAttemptAt
    delete effect.deadlineAt
    if (p.reason === 'operator') reopenEffect(fold, effect, event.seq)
  },
  // Waiting for the effect's flow control: the attempt number stays (no retry used up).
  [RT.effectQueued]: (fold, event) => {
    const effect = fold.effects[event.payload.effectId]
    if (effect) effect.status = 'queued'
  },
  [RT.effectAmbiguous]: (fold, event) => {
    const p = event.payload
    const effect = fold.effects[p.effectId]
    if (!effect) return
    effect.status = 'ambiguous'
    delete effect.deadlineAt
    if (p.error) effect.lastError = p.error
  },
  [RT.effectCancelRequested]: (fold, event) => {
    const p = event.payload
    patchEffect(fold, p.effectId, { cancelRequested: true })
    if (p.deadlineAt !== undefined) foldWorkerTiming(fold, { ...p, timeout: 'cancellation' })
  },
  [RT.effectCancelled]: (fold, event) => {
    const p = event.payload
    const effect = fold.effects[p.effectId]
    if (!effect) return
    delete fold.effects[p.effectId]
    settleCommand(fold, effect.threadId, effect.key, { status: 'cancelled' })
  },
}

/**
 * Worker timing fields of `dispatched`, worker `attempt.started`, `heartbeat` and
 * `cancel.requested`: the deadline, which timeout it enforces, start-to-close, and (at dispatch)
 * the timeouts that later callbacks apply.
 */
function foldWorkerTiming(
  fold: RunFold,
  p: WorkerDeadline & { effectId: string; timeouts?: WorkerTimeouts },
): void {
  const effect = fold.effects[p.effectId]
  if (!effect) return
  if (p.deadlineAt === null || p.deadlineAt === undefined) delete effect.deadlineAt
  else effect.deadlineAt = p.deadlineAt
  if (p.timeout) effect.deadlineKind = p.timeout
  else delete effect.deadlineKind
  if (p.closeAt !== undefined) effect.closeAt = p.closeAt
  if (p.timeouts !== undefined) effect.timeouts = p.timeouts
}

/** Patches an effect's record, if the fold tracks it (`deadlineAt: undefined` removes it). */
function patchEffect(fold: RunFold, effectId: string, patch: Partial<EffectRecord>): void {
  const effect = fold.effects[effectId]
  if (!effect) return
  Object.assign(effect, patch)
  if (patch.deadlineAt === undefined && 'deadlineAt' in patch) delete effect.deadlineAt
}

/**
 * An operator retry (at `seq`) of an effect whose final failure failed its thread (and run):
 * the command, the thread chain up to the root and the run return to running; the command and
 * the chain's spawn commands record `reopenedAt` (Outcome), so kinds see the work is live again.
 */
function reopenEffect(fold: RunFold, effect: EffectRecord, seq: number): void {
  const reopened = { status: 'pending' as const, error: undefined, reopenedAt: seq }
  settleCommand(fold, effect.threadId, effect.key, reopened)
  let threadId: string | null = effect.threadId
  while (threadId) {
    const thread: ThreadState | undefined = fold.state.threads[threadId]
    if (thread?.status !== 'failed') break
    setThread(fold, threadId, 'running', { output: thread.output, error: undefined })
    const parent: string | null = thread.parentThreadId
    if (parent) {
      const key = fold.books[threadId]?.spawnKey
      if (key !== undefined) settleCommand(fold, parent, key, reopened)
    }
    threadId = parent
  }
  const root = fold.state.threads[fold.state.rootThreadId]
  if (fold.state.status === 'failed' && root && root.status === 'running') {
    fold.state.status = 'running'
    delete fold.state.error
  }
}
