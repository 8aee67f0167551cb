import type { ThreadState } from '../envelope.js'
import type { ErrorInfo } from '../errors.js'
import type { Json } from '../json.js'
import { RT } from '../runtime-events.js'
import { dict } from './dict.js'
import type { FoldCases, RunFold } from './run-fold.js'
import { type CommandRecord, setCommand, type ThreadBook } from './thread-book.js'
import { threadContext } from './thread-context.js'
import { setThread, settleCommand } from './thread-records.js'
import { closeWait, openWaitsOf } from './waits.js'

// The thread family: `runtime.thread.*`. A thread starts with a fresh book and its kind's
// initial state; a thread that ends cancels its open waits and settles the parent's spawn
// command with its outcome.

export const threadCases: FoldCases = {
  [RT.threadStarted]: (fold, event, registry) => {
    const t = event.payload
    fold.state.threads[t.threadId] = {
      threadId: t.threadId,
      parentThreadId: t.parentThreadId,
      kind: t.kind,
      definitionName: t.definitionName,
      definitionVersion: t.definitionVersion,
      status: 'running',
    }
    // One shape for every book (fingerprint present or not): see thread-book.ts ThreadBook.
    const book: ThreadBook = {
      kindState: null,
      commands: dict(),
      input: t.input,
      openWaits: 0,
      fingerprint: t.definitionFingerprint,
    }
    if (t.key !== undefined) book.spawnKey = t.key
    fold.books[t.threadId] = book
    const { kind, ctx } = threadContext(registry, fold, t.threadId)
    book.kindState = kind.initialState(ctx)
    if (t.parentThreadId && t.key !== undefined) {
      const parent = fold.books[t.parentThreadId]
      if (parent) setCommand(parent, t.key, { kind: 'spawn', id: t.threadId, status: 'pending' })
    }
  },
  [RT.threadCompleted]: (fold, event) => {
    const output = event.payload.output ?? null
    endThread(
      fold,
      event.payload.threadId,
      'completed',
      { output },
      {
        status: 'completed',
        value: output,
      },
    )
  },
  [RT.threadFailed]: (fold, event) => {
    const error = event.payload.error
    endThread(fold, event.payload.threadId, 'failed', { error }, { status: 'failed', error })
  },
  [RT.threadCancelled]: (fold, event) => {
    // The parent sees a cancelled child as a failed command.
    const message = event.payload.reason ?? 'child thread cancelled'
    endThread(
      fold,
      event.payload.threadId,
      'cancelled',
      {},
      {
        status: 'failed',
        error: { code: 'CANCELLED', message },
      },
    )
  },
}

/**
 * Ends a thread: its state (`extra` replaces its output and error), its open waits (cancelled),
 * and the parent's spawn command (settled with `outcome`).
 */
function endThread(
  fold: RunFold,
  threadId: string,
  status: ThreadState['status'],
  extra: { output?: Json; error?: ErrorInfo },
  outcome: Partial<CommandRecord>,
): void {
  const thread = fold.state.threads[threadId]
  if (!thread) return
  setThread(fold, threadId, status, extra)
  for (const wait of openWaitsOf(fold, threadId)) {
    wait.status = 'cancelled'
    closeWait(fold, wait)
  }
  if (thread.parentThreadId) {
    settleCommand(fold, thread.parentThreadId, fold.books[threadId]?.spawnKey, outcome)
  }
}
