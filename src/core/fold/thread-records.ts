import type { ThreadState } from '../envelope.js'
import type { ErrorInfo } from '../errors.js'
import type { Json } from '../json.js'
import type { RunFold } from './run-fold.js'
import { type CommandRecord, commandOf, replaceCommand } from './thread-book.js'

// How the fold changes thread states and the command records of a thread: always by
// replacement, so fold copies (cloneFold) and views handed out can share them. Every family
// that ends a command or moves a thread goes through these two.

/** Replaces a thread's public state (never mutated: views handed out share these objects). */
export const setThread = (
  fold: RunFold,
  threadId: string,
  status: ThreadState['status'],
  extra?: { output?: Json; error?: ErrorInfo },
): void => {
  const prev = fold.state.threads[threadId]
  if (!prev) return
  const next: ThreadState = {
    threadId: prev.threadId,
    parentThreadId: prev.parentThreadId,
    kind: prev.kind,
    definitionName: prev.definitionName,
    definitionVersion: prev.definitionVersion,
    status,
  }
  const output = extra ? extra.output : prev.output
  const error = extra ? extra.error : prev.error
  if (output !== undefined) next.output = output
  if (error !== undefined) next.error = error
  fold.state.threads[threadId] = next
}

/** Patches the command `key` of thread `threadId`, if the thread recorded it. */
export const settleCommand = (
  fold: RunFold,
  threadId: string,
  key: string | undefined,
  patch: Partial<CommandRecord>,
): void => {
  if (key === undefined) return
  const book = fold.books[threadId]
  if (book && commandOf(book, key)) replaceCommand(book, key, patch)
}
