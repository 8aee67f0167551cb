import type { Outcome } from '../commands.js'
import type { ErrorInfo } from '../errors.js'
import type { Json } from '../json.js'
import { dict } from './dict.js'

// A thread's book: its kind state and the record of every keyed command it issued. Command
// records are never mutated, only replaced: a fold copy (cloneFold) then shares them instead of
// copying one per keyed command, which a long conversation has thousands of.

export type CommandStatus = 'pending' | 'completed' | 'failed' | 'timed_out' | 'cancelled'

/** What a keyed command of a thread became. */
export interface CommandRecord {
  kind: 'invoke' | 'spawn' | 'wait' | 'emit'
  /** effectId, child threadId or waitId (empty for emits). */
  id: string
  status: CommandStatus
  value?: Json
  error?: ErrorInfo
  /** Seq of the operator retry that last re-opened the command after it failed. */
  reopenedAt?: number
}

export interface ThreadBook {
  kindState: unknown
  /**
   * The thread's keyed commands: the newest here, older ones in `archived`. Read through
   * `commandOf`, write through `setCommand`; a key here shadows the archive.
   */
  commands: Record<string, CommandRecord>
  /**
   * Older command records, moved out of `commands` every ARCHIVE_AT new keys. Never mutated
   * once made (a new archive replaces it), so fold copies share it: a long conversation's
   * thousands of keys are not copied at every park.
   */
  archived?: Record<string, CommandRecord>
  /** Keys added to `commands` since the last archive (absent in format-1 snapshots). */
  fresh?: number
  input: Json
  /** The parent's command key that spawned this thread. */
  spawnKey?: string
  /** Fingerprint of the definition's shape recorded when the thread started, if any. */
  fingerprint?: string
  openWaits: number
}

/** A thread's command record for `key`, wherever it lives. */
export const commandOf = (book: ThreadBook, key: string): CommandRecord | undefined =>
  book.commands[key] ?? book.archived?.[key]

/** Every command record of a thread (newest shadowing archived). */
export function allCommands(book: ThreadBook): CommandRecord[] {
  if (!book.archived) return Object.values(book.commands)
  const out: CommandRecord[] = Object.values(book.commands)
  for (const key in book.archived) if (!(key in book.commands)) out.push(book.archived[key])
  return out
}

/**
 * Replaces the record under `key` (it must exist) with `patch` applied. A field patched to
 * `undefined` is removed.
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

const PENDING: Outcome = Object.freeze({ status: 'pending' })

/** What `ctx.outcome(key)` reports for a command record. */
export function outcomeOf(record: CommandRecord | undefined): Outcome {
  if (!record) return { status: 'none' }
  // The answer most decides get, shared (outcomes are read-only to kinds).
  if (record.status === 'pending' && record.reopenedAt === undefined) return PENDING
  const outcome = settledOutcome(record)
  if (record.reopenedAt !== undefined) outcome.reopenedAt = record.reopenedAt
  return outcome
}

function settledOutcome(record: CommandRecord): Exclude<Outcome, { status: 'none' }> {
  switch (record.status) {
    case 'pending':
      return { status: 'pending' }
    case 'completed':
      return { status: 'completed', value: record.value ?? null }
    case 'failed':
      return { status: 'failed', error: record.error ?? { code: 'FAILED', message: 'failed' } }
    case 'timed_out':
      return { status: 'timed_out' }
    case 'cancelled':
      return { status: 'cancelled' }
  }
}
