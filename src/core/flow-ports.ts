import type { Json } from './json.js'

// The store's side of flow control (docs/flow-control.md); re-exported by ports.ts.

/** A run waiting for admission by its definition's flow control (docs/flow-control.md). */
export interface FlowEntry {
  runId: string
  /** `<kind>:<name>` of the run's definition. */
  queue: string
  /** The concurrency key ('' for the definition's one queue). */
  key: string
  /** Higher first within a key. */
  priority: number
  /** Not admitted before this (engine clock ms). */
  startAt: number
  enqueuedAt: number
}

/** One admission round of one key (`FlowStore.admit`). */
export interface AdmitRequest {
  queue: string
  key: string
  /** At most this many runs of the key admitted and not finished at once. */
  limit: number
  now: number
  /**
   * A run admitted before its log exists (`enqueue`, admitted in the same call) holds its
   * slot until this time unless its log appears: a start that died before writing frees it.
   */
  holdUntil: number
  /** A run to queue first (a start); it is admitted in this call when a slot is free. */
  enqueue?: FlowEntry
  /**
   * Runs to queue, in order, instead of `enqueue` (starts of one key that one process
   * gathered while its previous round ran), all in this call: every one is queued, and the
   * key's free slots admit waiting runs by priority, then queueing order (a store may run a
   * round per entry, in order; Postgres runs one round for them all). Not with `skipIfLive`.
   */
  enqueueAll?: readonly FlowEntry[]
  /**
   * Rate: at most `limit` admissions of the key in any `periodMs` (each admission is recorded
   * with `now`, and a round admits only while fewer than `limit` were recorded after
   * `now - periodMs`).
   */
  rate?: { limit: number; periodMs: number }
  /**
   * Singleton `skip`: when the key has a live run (admitted and not finished, queued, or
   * queued by a start still writing its log), `enqueue` is not queued and that run is
   * answered as `existing`.
   */
  skipIfLive?: boolean
}

/** What one admission round did (`FlowStore.admit`). */
export interface AdmitResult {
  /** The runs admitted, in admission order. */
  admitted: string[]
  /** With `skipIfLive`: the live run `enqueue` was not queued beside. */
  existing?: string
  /** With `rate`: when the window admits again, if it is full now (engine clock ms). */
  retryAt?: number
}

/** One start of a debounced definition (`FlowStore.debounce`). */
export interface DebounceRequest {
  /** The entry of a new window's run (its `startAt` is set to the window's end). */
  entry: FlowEntry
  /** The debounce key (not the queue's key: a window has its own). */
  key: string
  /** The start's input: the window's run starts with the last one. */
  input: Json
  periodMs: number
  maxWaitMs?: number
  /** A window whose run has no log and was opened before this is abandoned (its start died). */
  abandonedBefore: number
}

/** A debounce window whose start died before writing its run's log (`FlowStore.orphanedWindows`). */
export interface OrphanedWindow {
  runId: string
  queue: string
  /** The window's last input. */
  input: Json
}

/** A key's queue as `FlowStore.keys` reports it. */
export interface FlowKeyState {
  queue: string
  key: string
  /** Runs admitted and not finished. */
  active: number
  /** Runs waiting (their log written, not yet admitted). */
  queued: number
  /** Admissions recorded for the key's rate after `since` (keys()'s argument). */
  recentAdmissions: number
  /** When the oldest waiting run was queued (engine clock ms), null if none waits. */
  oldestQueuedAt: number | null
}

/**
 * Flow control's queues in the store (docs/flow-control.md): one row per run that is queued or
 * holds a slot. A slot is counted from the store's run meta, so it is freed by the very commit
 * that ends the run (its status), on every process sharing the store.
 */
export interface FlowStore {
  /**
   * One atomic admission round of a key (SQLite: one write transaction; Postgres: one call,
   * serialized per key by a transaction lock): forgets entries of finished runs, queues
   * `enqueue` (a run already queued is kept as it is), counts the key's admitted runs that are
   * not finished, and admits up to `limit` minus that many waiting runs whose `startAt` is
   * due, highest priority first, then in queueing order. Only runs whose log says `queued` are
   * admitted, or `enqueue` itself. Returns the run ids admitted, in that order.
   */
  admit(request: AdmitRequest): Promise<AdmitResult>
  /**
   * The run's admission: when (engine clock ms) and, for a debounced run, the last input of
   * its window; null when it is queued or has no entry.
   */
  admission(runId: string): Promise<{ at: number; input?: Json } | null>
  /**
   * One start of a debounced definition, atomic for every process on the store: joins the
   * key's open window (a window whose run is not admitted: its input becomes this start's,
   * its end moves to `periodMs` from now, never past `maxWaitMs` from its opening), or opens
   * one with `entry` (queued, not admitted before the window ends). Answers the window's run.
   * A start of the run of an open window (`entry.runId`'s own: its first start died before
   * writing the log) takes that window back as a join would, answered as `opened`.
   */
  debounce(request: DebounceRequest): Promise<{ runId: string; opened: boolean; endsAt: number }>
  /**
   * Debounce windows whose start died before writing its run's log: the run has no log, its
   * entry is not admitted, and it was queued before `before`; at most `limit`, in queueing
   * order, each with its queue and last input. The sweep starts their runs (a start of a run
   * whose window is still open takes that window back: `debounce`).
   */
  orphanedWindows(before: number, limit: number): Promise<OrphanedWindow[]>
  /**
   * Forgets the entries of starts that died before writing their run's log: no log, no debounce
   * window (`orphanedWindows`: those are started instead), queued before `before` (admitted or
   * not). Returns how many. The sweep calls it with the hold's time: a start still alive has
   * written its log by then.
   */
  forgetAbandoned(before: number): Promise<number>
  /**
   * The keys with a run waiting to be admitted whose `startAt <= now` (their log written), by
   * queue then key (code unit order), after `after` when given, at most `limit`; and runs
   * admitted before `stalledBefore` whose log still says `queued` (the process that admitted
   * them stopped before starting them).
   */
  pending(
    now: number,
    stalledBefore: number,
    limit: number,
    after?: { queue: string; key: string },
  ): Promise<{ keys: Array<{ queue: string; key: string }>; stalled: string[] }>
  /**
   * Every key with a queued or admitted run, by queue and key, with the rate admissions it
   * recorded after `since`.
   */
  keys(since: number): Promise<FlowKeyState[]>
  /**
   * The store's `append` takes `AppendOptions.admit`: a new run with a free slot is admitted in
   * its first append, with no admission round of its own.
   */
  readonly admitsInAppend?: boolean
}
