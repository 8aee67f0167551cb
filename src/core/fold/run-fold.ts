import type { RunState } from '../envelope.js'
import type { Json } from '../json.js'
import type { Registry } from '../registry.js'
import type { InputDeferredPayload, RuntimeEvent, RuntimeEventType } from '../runtime-events.js'
import { dict } from './dict.js'
import type { EffectRecord } from './effect-record.js'
import type { ThreadBook } from './thread-book.js'
import type { TimerRecord, WaitRecord } from './wait-record.js'

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
  /**
   * Input recorded by a host that could not execute the run, by seq, until a host that can
   * applies it (`runtime.input.deferred` / `runtime.input.applied`). Absent when none waits.
   */
  deferredInputs?: Record<string, InputDeferredPayload>
  /** Run-start idempotency key, if any. */
  startKey?: string
  startInput: Json
  /**
   * The projections this fold holds (projections.ts): each name present maps to the
   * projection folded over events 1..lastSeq. Absent names are not held, whatever the engine's
   * options say, so a snapshot says by itself what it holds.
   */
  projections: Record<string, Json>
  /**
   * The run's log protocol version, from `runtime.run.started` (protocol.ts). Absent in
   * folds and snapshots written before the version existed, which means 1.
   */
  protocol?: number
  /** The flow control queue and key the run was queued or admitted under (docs/flow-control.md). */
  flow?: { queue: string; key: string }
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
    // Command records are replaced, never mutated (thread-book.ts), so the copy shares them, and the
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
    ...(fold.deferredInputs && { deferredInputs: dict(fold.deferredInputs) }),
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

/**
 * How one runtime event type changes a fold. Each event family (run.ts, threads.ts, waits.ts,
 * effects.ts) exports a table of these; apply-event.ts dispatches on the event type.
 */
export type FoldCase<T extends RuntimeEventType> = (
  fold: RunFold,
  event: RuntimeEvent<T>,
  registry: Registry,
) => void

/** A family's cases, by the runtime event type each one folds. */
export type FoldCases = { readonly [T in RuntimeEventType]?: FoldCase<T> }
