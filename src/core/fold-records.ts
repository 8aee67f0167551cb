import type { ThreadState } from './envelope.js'
import type { ErrorInfo } from './errors.js'
import { type CommandRecord, commandOf, dict, type RunFold, type ThreadBook } from './fold-types.js'
import type { Json } from './json.js'

// How the fold changes thread states and command records: always by replacement, so fold
// copies (cloneFold) and views handed out can share them.

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

/**
 * Command records are never mutated, only replaced: a fold copy (cloneFold) then shares them
 * instead of copying one per keyed command, which a long conversation has thousands of.
 * A field patched to `undefined` is removed.
 */
export function replaceCommand(book: ThreadBook, key: string, patch: Partial<CommandRecord>): void {
  const prev = commandOf(book, key) as CommandRecord
  // Built field by field (one object shape for every record, no spread, no delete).
  const next: CommandRecord = { kind: prev.kind, id: prev.id, status: patch.status ?? prev.status }
  const value = 'value' in patch ? patch.value : prev.value
  const error = 'error' in patch ? patch.error : prev.error
  const reopenedAt = patch.reopenedAt ?? prev.reopenedAt
  if (value !== undefined) next.value = value
  if (error !== undefined) next.error = error
  if (reopenedAt !== undefined) next.reopenedAt = reopenedAt
  setCommand(book, key, next)
}

/** New keys moved to the shared archive at a time: amortizes the copy to 1/ARCHIVE_AT per key. */
const ARCHIVE_AT = 64

/**
 * Records `record` under `key`. Every ARCHIVE_AT new keys, `commands` moves into a new
 * `archived` map (the old archive is never mutated, so fold copies that share it stay valid).
 * Deterministic: the same events give the same split.
 */
export function setCommand(book: ThreadBook, key: string, record: CommandRecord): void {
  const added = book.commands[key] === undefined
  book.commands[key] = record
  if (!added) return
  const fresh = (book.fresh ?? Object.keys(book.commands).length - 1) + 1
  if (fresh < ARCHIVE_AT) {
    book.fresh = fresh
    return
  }
  const archived = dict(book.archived)
  for (const k in book.commands) archived[k] = book.commands[k]
  book.archived = archived
  book.commands = dict()
  book.fresh = 0
}
