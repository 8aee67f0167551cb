import type { Outcome } from './commands.js'
import type { RunState } from './envelope.js'
import type { ErrorInfo } from './errors.js'
import type { Json } from './json.js'
import type {
  EffectExecution,
  WaitOn,
  WorkerDeadlineKind,
  WorkerTimeouts,
} from './runtime-events.js'

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
   * `commandOf`, write through `setCommand` (fold.ts); a key here shadows the archive.
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

export type EffectStatus =
  | 'requested'
  | 'started'
  | 'retry_scheduled'
  | 'dispatched'
  | 'completed'
  | 'failed'
  | 'ambiguous'
  | 'timed_out'
  | 'cancelled'

export interface EffectRecord {
  effectId: string
  threadId: string
  key: string
  type: string
  input: Json
  execution: EffectExecution
  retry?: Json
  timeoutMs?: number
  status: EffectStatus
  /** The current (or next, when a retry is scheduled) attempt number; 0 before the first. */
  attempt: number
  nextAttemptAt?: number
  deadlineAt?: number
  result?: Json
  lastError?: ErrorInfo
  cancelRequested?: boolean
  /** Worker effects: which timeout `deadlineAt` enforces. */
  deadlineKind?: WorkerDeadlineKind
  /** Worker effects: the start-to-close deadline of the current attempt, once started. */
  closeAt?: number
  /** Worker effects: the timeouts recorded at dispatch (the log, not the code, decides). */
  timeouts?: WorkerTimeouts
}

export interface WaitRecord {
  waitId: string
  threadId: string
  key: string
  on: WaitOn
  status: 'open' | 'satisfied' | 'timed_out' | 'cancelled'
  timerId?: string
}

export interface TimerRecord {
  timerId: string
  waitId: string
  at: number
}

/**
 * The fold of a run's log: the public RunState plus the runtime's bookkeeping. JSON, so it
 * can be snapshotted. The engine owns a fold exclusively (per-run queue) and mutates it in
 * place; `viewState` hands out copies.
 */
export interface RunFold {
  format: 1
  state: RunState
  books: Record<string, ThreadBook>
  /** Effects not yet completed or cancelled (failed and ambiguous ones stay for operators). */
  effects: Record<string, EffectRecord>
  /** Open waits only (a closed wait's outcome lives in its command record). */
  waits: Record<string, WaitRecord>
  /** Open timers only. */
  timers: Record<string, TimerRecord>
  /** Signal idempotency keys → seq of the first event of that signal. */
  signalKeys: Record<string, number>
  /**
   * Signal idempotency keys → digest of the request that used them (`runtime.signal.received`),
   * so a retry with another body is a conflict. Absent in folds of older snapshots, and for
   * keys recorded before digests were.
   */
  signalDigests?: Record<string, string>
  /** Run-start idempotency key, if any. */
  startKey?: string
  startInput: Json
  /**
   * The projections this fold holds (fold-projections.ts): each name present maps to the
   * projection folded over events 1..lastSeq. Absent names are not held, whatever the engine's
   * options say, so a snapshot says by itself what it holds.
   */
  projections: Record<string, Json>
  /**
   * The run's log protocol version, from `runtime.run.started` (fold-protocol.ts). Absent in
   * folds and snapshots written before the version existed, which means 1.
   */
  protocol?: number
}

/**
 * A map-like object keyed by ids. Null-prototype objects live in V8's dictionary mode: unique
 * keys (run-specific thread, effect and wait ids) then cost no hidden-class transitions, which
 * otherwise pile up across every run the process ever folds.
 */
export function dict<T>(from?: Record<string, T>): Record<string, T> {
  const out: Record<string, T> = Object.create(null)
  if (!from) return out
  // A keys loop: ~3.5× faster than Object.assign into a dictionary-mode object.
  const keys = Object.keys(from)
  for (let i = 0; i < keys.length; i++) out[keys[i]] = from[keys[i]]
  return out
}

/**
 * A private copy of a fold for a writer: every object the fold mutates in place (the run state,
 * thread books, effect and wait records, and every map) is copied; what is only ever replaced
 * (thread states, command records, kind states, payload values, timers) is shared. Linear in the
 * number of threads, effects and waits plus one pointer per command, not in the bytes of the
 * run's data. Also puts the maps in dictionary mode, so it also serves for folds parsed from a
 * snapshot.
 */
export function cloneFold(fold: RunFold): RunFold {
  const books = dict<ThreadBook>()
  for (const id in fold.books) {
    const book = fold.books[id]
    // Command records are replaced, never mutated (fold.ts), so the copy shares them, and the
    // archive of older ones. Spread copies enumerable fields only: the cached thread runtime is
    // rebuilt for the copy.
    const copy: ThreadBook = { ...book, commands: dict(book.commands) }
    // An archive parsed from a snapshot is a plain object: give it a null prototype, once.
    if (copy.archived && Object.getPrototypeOf(copy.archived) !== null) {
      copy.archived = dict(copy.archived)
    }
    books[id] = copy
  }
  const effects = dict<EffectRecord>()
  for (const id in fold.effects) effects[id] = { ...fold.effects[id] }
  const waits = dict<WaitRecord>()
  for (const id in fold.waits) waits[id] = { ...fold.waits[id] }
  return {
    ...fold,
    state: { ...fold.state, threads: dict(fold.state.threads) },
    books,
    effects,
    waits,
    timers: dict(fold.timers),
    signalKeys: dict(fold.signalKeys),
    signalDigests: dict(fold.signalDigests),
    projections: dict(fold.projections),
  }
}

export function emptyFold(runId: string): RunFold {
  return {
    format: 1,
    state: {
      runId,
      status: 'running',
      rootThreadId: '',
      kind: '',
      definitionName: '',
      definitionVersion: '',
      threads: dict(),
      lastSeq: 0,
      createdAt: 0,
      updatedAt: 0,
    },
    books: dict(),
    effects: dict(),
    waits: dict(),
    timers: dict(),
    signalKeys: dict(),
    signalDigests: dict(),
    startInput: null,
    projections: dict(),
  }
}

/** A copy of the public state that later folds cannot change. */
export function viewState(fold: RunFold): RunState {
  // The threads map is copied like a dict and then given the plain prototype callers expect:
  // spreading it into a literal would make a new hidden class for every run's unique thread
  // ids (about 3× slower, and each one lives in old space until a full GC).
  const threads = Object.setPrototypeOf(dict(fold.state.threads), Object.prototype)
  return { ...fold.state, threads }
}

export function outcomeOf(record: CommandRecord | undefined): Outcome {
  if (!record) return { status: 'none' }
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
