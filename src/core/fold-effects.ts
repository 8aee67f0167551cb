import type { ThreadState } from './envelope.js'
import { setThread, settleCommand } from './fold-records.js'
import type { EffectRecord, RunFold } from './fold-types.js'
import type { EffectRequestedPayload, WorkerDeadline, WorkerTimeouts } from './runtime-events.js'

/** The record of an effect just requested (before its first attempt). */
export function requestedEffect(r: EffectRequestedPayload): EffectRecord {
  const record: EffectRecord = {
    effectId: r.effectId,
    threadId: r.threadId,
    key: r.key,
    type: r.type,
    input: r.input,
    execution: r.execution,
    status: 'requested',
    attempt: 0,
  }
  if (r.retry !== undefined) record.retry = r.retry
  if (r.timeoutMs !== undefined) record.timeoutMs = r.timeoutMs
  return record
}

/**
 * Worker timing fields of `dispatched`, worker `attempt.started`, `heartbeat` and
 * `cancel.requested`: the deadline, which timeout it enforces, start-to-close, and (at dispatch)
 * the timeouts that later callbacks apply.
 */
export function foldWorkerTiming(
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

export function patchEffect(fold: RunFold, effectId: string, patch: Partial<EffectRecord>): void {
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
export function reopenEffect(fold: RunFold, effect: EffectRecord, seq: number): void {
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
