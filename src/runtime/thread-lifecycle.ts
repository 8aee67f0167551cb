// How threads end: completed or failed by their kind, or cancelled (by their parent, by an
// operator, by a finishing thread). Structured concurrency: a thread that ends takes its
// unfinished children and effects with it, deepest first.
import { isTerminal } from '../core/envelope.js'
import type { ErrorInfo } from '../core/errors.js'
import type { Json } from '../core/json.js'
import { RT } from '../core/runtime-events.js'
import type { Pass } from './context.js'
import { recordableError } from './validate.js'
import { requestWorkerCancel } from './worker-dispatch.js'

/**
 * Cancels an effect that has not finished: aborts its in-process attempt and records it; a
 * worker attempt in flight gets `cancel.requested` and `worker.cancel` instead, and is settled
 * by the worker's answer or its cancellation timeout.
 */
export function cancelEffect(pass: Pass, effectId: string, reason: string): void {
  const effect = pass.fold.effects[effectId]
  if (!effect || effect.status === 'failed' || effect.status === 'timed_out') return
  if (requestWorkerCancel(pass, effect, reason)) return
  const running = pass.mem.inflight.get(effectId)
  if (running) {
    running.abort(new Error(reason))
    pass.mem.inflight.delete(effectId)
  }
  pass.batch.add(
    RT.effectCancelled,
    { effectId, attempt: effect.attempt, reason },
    { threadId: effect.threadId, effectId },
  )
}

/** Cancels a thread and its descendants, deepest first, with their unfinished effects. */
export function cancelSubtree(pass: Pass, threadId: string, reason: string): void {
  const fold = pass.fold
  const thread = fold.state.threads[threadId]
  if (!thread || isTerminal(thread.status)) return
  endChildrenAndEffects(pass, threadId, reason)
  pass.batch.add(RT.threadCancelled, { threadId, reason }, { threadId })
  if (threadId === fold.state.rootThreadId && !isTerminal(fold.state.status))
    pass.batch.add(RT.runCancelled, { reason }, { threadId: null })
}

/**
 * Completes or fails a thread: its unfinished children and effects are cancelled first
 * (structured concurrency), then the outcome is recorded; the root's outcome is the run's.
 */
export function finishThread(
  pass: Pass,
  threadId: string,
  outcome: 'completed' | 'failed',
  value: Json | ErrorInfo,
): void {
  const fold = pass.fold
  const thread = fold.state.threads[threadId]
  if (!thread || isTerminal(thread.status)) return
  endChildrenAndEffects(pass, threadId, `thread ${outcome}`)
  const isRoot = threadId === fold.state.rootThreadId
  if (outcome === 'completed') {
    pass.batch.add(RT.threadCompleted, { threadId, output: value as Json }, { threadId })
    if (isRoot) pass.batch.add(RT.runCompleted, { output: value as Json }, { threadId: null })
  } else {
    const max = pass.ctx.options.maxEventBytes
    const error = recordableError(value as ErrorInfo, max) as unknown as Json
    pass.batch.add(RT.threadFailed, { threadId, error }, { threadId })
    if (isRoot) pass.batch.add(RT.runFailed, { error }, { threadId: null })
  }
}

function endChildrenAndEffects(pass: Pass, threadId: string, reason: string): void {
  const fold = pass.fold
  for (const child of childrenOf(pass, threadId)) cancelSubtree(pass, child, reason)
  for (const effectId in fold.effects)
    if (fold.effects[effectId]?.threadId === threadId) cancelEffect(pass, effectId, reason)
}

function childrenOf(pass: Pass, threadId: string): string[] {
  const out: string[] = []
  const threads = pass.fold.state.threads
  for (const id in threads) {
    const thread = threads[id]
    if (thread.parentThreadId === threadId && !isTerminal(thread.status)) out.push(id)
  }
  return out
}
