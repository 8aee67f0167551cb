import type { RunAttributeFilter, RunAttributes, StoreAttributeFilter } from './attributes.js'
import type { ClaimStore } from './claim-ports.js'
import type { EventEnvelope, RunStatus } from './envelope.js'
import type { FlowStore } from './flow-ports.js'
import type { Json } from './json.js'
import type { ScheduleStore, WaitUrlStore } from './schedule-ports.js'
import type { WorkerTask, WorkerTaskStore } from './worker-task-ports.js'

export type * from './claim-ports.js'
export type * from './flow-ports.js'
export type * from './schedule-ports.js'
export type * from './worker-task-ports.js'

/**
 * Per-run metadata a store keeps beside the log, written in the same transaction as the
 * append that changed it. Lets hosts list summaries and find due deadlines without folding
 * every run.
 */
export interface RunMeta {
  status: RunStatus
  kind: string
  definitionName: string
  definitionVersion: string
  createdAt: number
  updatedAt: number
  /** Earliest durable deadline (timer, retry, effect timeout), or null. */
  nextDeadlineAt: number | null
}

export interface AppendOptions {
  /** The tail the writer folded; the append fails with SeqConflictError if it moved. */
  expectedSeq: number
  /** Unique per run: a second append with the same key fails with IdempotencyConflictError. */
  idempotencyKey?: string
  meta?: RunMeta
  /**
   * How soon the append must be durable. `'immediate'` (default): when it resolves, as far as
   * the store's own setting goes. `'deferred'`: nothing is acknowledged on this append until a
   * later one, so it only has to survive a crash of the writer's process (the engine defers a
   * commit that records in-process attempts about to start, and no outcome); a store may
   * resolve before it is power-safe and make it so with the next immediate append, or `flush()`.
   */
  durability?: 'immediate' | 'deferred'
  /**
   * The writer's claim on the run (docs/storage.md), checked and written in the same transaction as
   * the events, so taking and renewing a lease costs no commit of its own. See `LeaseClaim`.
   * Without it the store checks nothing about ownership (one process, or the memory store).
   */
  lease?: LeaseClaim
  /**
   * A new run (`expectedSeq` 0) of a flow-controlled definition takes its slot in this append's
   * transaction (only when `flow.admitsInAppend`; docs/flow-control.md): atomically with every
   * admission round of the key, the store forgets the key's finished entries and, when no run
   * of the key waits (its log says `queued`, its `startAt` due) and fewer than `limit` are
   * admitted and not finished, records the run's entry admitted at `now`. Otherwise nothing
   * of the append is written and it fails with FlowKeyFullError.
   */
  admit?: AppendAdmission
}

/** What a new run's first append admits (`AppendOptions.admit`). */
export interface AppendAdmission {
  queue: string
  key: string
  limit: number
  priority: number
  now: number
  /** The entry's hold (`AdmitRequest.holdUntil`). */
  holdUntil: number
}

/**
 * The run's lease as the store keeps it: who may append (`owner`), the fencing token
 * (`epoch`, bumped by each take-over) and when the claim lapses (`expiresAt`, engine clock ms).
 */
export interface Lease {
  runId: string
  owner: string
  epoch: number
  expiresAt: number
}

/**
 * What an append (or `renewLease`) claims. The store accepts it when
 * - the stored lease is held by `owner` with the same `epoch` (a renewal), or
 * - there is no stored lease, or it expired before `now`, and `epoch` is greater than the
 *   stored epoch (a take-over: the writer read the lease and claims `stored.epoch + 1`),
 * and then stores `{ owner, epoch, expiresAt }`. Anything else fails with `LeaseLostError`
 * and writes nothing (events, meta, lease). `expiresAt <= now` releases the run on commit.
 * The rule is `decideClaim` (core/claim-rule.ts), with its table of cases in the contract.
 */
export interface LeaseClaim {
  owner: string
  epoch: number
  expiresAt: number
  /** The writer's clock reading for this claim. */
  now: number
}

/**
 * Ownership of runs across processes sharing one store (docs/storage.md). A store that several
 * processes can open implements it; the memory store does too (trivially one process), so
 * one contract suite covers all three.
 */
export interface LeaseStore {
  /**
   * Whether other processes can reach these leases (a database file or server). The engine
   * enforces ownership by default only then: the memory store's leases exist for the contract
   * suite and cost its one process nothing.
   */
  readonly shared: boolean
  /** The stored lease, expired or not; null if the run was never leased. */
  readLease(runId: string): Promise<Lease | null>
  /**
   * Extends or takes the lease without appending (renewal while attempts are in flight, or a
   * take-over before work that appends nothing yet). Same rule as an append's `lease`.
   */
  renewLease(runId: string, claim: LeaseClaim): Promise<Lease>
  /**
   * Lets the lease go if `owner`/`epoch` still hold it (its `expiresAt` becomes 0, the epoch
   * stays); otherwise does nothing.
   */
  releaseLease(runId: string, owner: string, epoch: number): Promise<void>
  /**
   * Atomically takes the leases of up to `limit` runs whose `nextDeadlineAt <= now` and whose
   * lease is free or expired (Postgres: `FOR UPDATE SKIP LOCKED`), for `owner` until
   * `expiresAt`, each with the stored epoch + 1. Two processes never claim the same run.
   * With `only`, just the runs whose meta names one of those definition versions: a host
   * claims the runs it can execute and leaves the others to a host that registers them
   * (docs/deploys.md).
   */
  claimDue(
    owner: string,
    now: number,
    expiresAt: number,
    limit: number,
    only?: readonly DefinitionVersionKey[],
  ): Promise<Array<{ runId: string; epoch: number; nextDeadlineAt: number }>>
  /**
   * Brings the run's next deadline forward to `at` (a later stored deadline becomes `at`; an
   * earlier one stays), so the next `claimDue` after `at` picks the run up: how a host that
   * cannot execute a run hands input it recorded to a host that can. Nothing for a run
   * without a row.
   */
  markDue(runId: string, at: number): Promise<void>
}

/** A definition version as a run's meta names it (`LeaseStore.claimDue`'s `only`). */
export interface DefinitionVersionKey {
  kind: string
  definitionName: string
  definitionVersion: string
}

/** A committed event with its place in the store's commit order. */
export interface FeedEntry {
  /** Increases with commit order across all runs; within a run it follows seq. Never reused. */
  position: number
  event: EventEnvelope
  /** The length of the stored payload, where the store reads it (SQLite, Postgres). */
  bytes?: number
}

/**
 * A projector's durable progress. Who works it is its claim `projector:<name>` in the store's
 * `ClaimStore` (`projectorClaimName`), not part of the checkpoint.
 */
export interface ProjectorCheckpoint {
  name: string
  /** Every event with a position up to this one has been handled. */
  position: number
  /** When the position last moved (engine clock ms), 0 if never. */
  updatedAt: number
}

/**
 * The store's side of post-commit projectors (docs/projectors.md): a read of committed events after a
 * position, and per projector a checkpoint, so a restarted process resumes where the last one
 * stopped. One process at a time works a projector by holding its claim (`EventStore.claims`,
 * `projector:<name>`); `saveCheckpoint` checks that claim in the same statement as the write.
 */
export interface ProjectionFeed {
  /**
   * Committed events with `position > after`, ascending, at most `limit`; with `maxBytes`, no
   * entry after the stored payloads read reach it (the first entry always comes, whatever its
   * size), so one page of large events stays a bounded buffer. The memory store, which holds
   * every event anyway, bounds by `limit` only.
   */
  readAfter(after: number, limit: number, maxBytes?: number): Promise<FeedEntry[]>
  /** The highest position written so far, 0 for an empty store. */
  headPosition(): Promise<number>
  /** Called after each commit of this process (a hint; other processes' commits are polled). */
  watch(listener: () => void): () => void
  /** The stored checkpoint, null for a projector that never saved one. */
  checkpoint(name: string): Promise<ProjectorCheckpoint | null>
  /**
   * Moves the position forward if the projector's claim (`projector:<name>`) is still held by
   * `owner` at `epoch` and not let go; false (nothing written) otherwise. The check and the write
   * are one statement, atomic against every other process's claims and saves.
   */
  saveCheckpoint(
    name: string,
    owner: string,
    epoch: number,
    position: number,
    now: number,
  ): Promise<boolean>
  /**
   * The highest seq of the run's retained events at a position up to `position` (0 if none):
   * what a projector checkpointed at `position` has seen of the run (trim coverage).
   */
  coveredSeq(runId: string, position: number): Promise<number>
}

export interface ReadOptions {
  fromSeq?: number
  limit?: number
}

export interface LogBounds {
  /** First retained seq (after trimming), 0 for an empty log. */
  head: number
  /** Last seq, 0 for an empty log. */
  tail: number
}

export interface RunSummary extends RunMeta {
  runId: string
  /** The run's attributes (docs/operating-runs.md, "Attributes"); absent when it has none. */
  attributes?: RunAttributes
  /** No live host registers the run's version (docs/deploys.md, "Stranded runs"). */
  stranded?: true
}

/**
 * What `listRunSummaries` and `GET /runs/summaries` take. Runs come in creation order, newest
 * first unless `order` is `'oldest'`, so a run never moves between pages while someone pages
 * through them. Every filter given must hold (docs/operating-runs.md, "Finding runs").
 */
export interface SummaryQuery {
  /** Only runs with this status, or with any of these. */
  status?: RunStatus | readonly RunStatus[]
  /** Only runs of this definition name. */
  definitionName?: string
  /** Only runs of this definition version. */
  definitionVersion?: string
  /** Only runs whose id starts with this text (case-sensitive). */
  runIdPrefix?: string
  /** Only runs created at or after this time (epoch ms). */
  createdFrom?: number
  /** Only runs created before this time (epoch ms). */
  createdBefore?: number
  /** Only runs last updated at or after this time (epoch ms). */
  updatedFrom?: number
  /** Only runs last updated before this time (epoch ms). */
  updatedBefore?: number
  /**
   * Only runs whose attributes pass these filters (1 to 4): a value is equality,
   * `{ min?, max? }` an inclusive range of a number or string attribute.
   */
  attributes?: Record<string, RunAttributeFilter>
  /** `'newest'` (default): the most recently created first; `'oldest'`: the first created first. */
  order?: SummaryOrder
  /** Page size, 1–1000; default 100. */
  limit?: number
  /** `nextCursor` of the previous page; the same filters and order must be passed again. */
  cursor?: string
}

export type SummaryOrder = 'newest' | 'oldest'

/**
 * A validated query as stores receive it: `limit` is always set, statuses are a list (absent:
 * any status), and an absent `order` is `'newest'`.
 */
export interface StoreSummaryQuery extends Omit<SummaryQuery, 'status' | 'limit' | 'attributes'> {
  status?: readonly RunStatus[]
  attributes?: readonly StoreAttributeFilter[]
  limit: number
}

export interface SummaryPage {
  runs: RunSummary[]
  /** Pass as `cursor` for the next page; `null` on the last page. */
  nextCursor: string | null
}

/** How many runs not yet terminal a definition version has (`countActiveRuns`). */
export interface ActiveRunCount {
  kind: string
  definitionName: string
  definitionVersion: string
  runs: number
  /** The smallest run id among them (a sample whose start event the report reads). */
  sampleRunId: string
}

/**
 * How a store deletes runs (docs/data-lifecycle.md). `at` and `reason` make the deletion's
 * record: a feed entry of type `runtime.run.deleted` (run id, reason, the log's tail; no
 * payload of the run) that projectors read after the run's last event, so each can drop its
 * own rows. The record is kept until every projector checkpoint stored has passed it.
 */
export interface DeleteRunOptions {
  /** When (engine clock ms): the record's timestamp. */
  at: number
  /** Why: `'request'` (deleteRun) or `'retention'`. */
  reason: string
  /**
   * Deletes only when the stored status is one of these (checked in the same transaction as
   * the delete, so a run reopened meanwhile is kept); default: whatever its status.
   */
  statuses?: readonly RunStatus[]
}

/** What `deleteFinished` takes: one bounded batch of a retention sweep. */
export interface FinishedRunsQuery {
  /** Runs with one of these statuses … */
  statuses: readonly RunStatus[]
  /** … last updated before this time (engine clock ms) … */
  updatedBefore: number
  /** … at most this many, oldest first. */
  limit: number
  at: number
  reason: string
  /**
   * Only these runs (an archived batch), each only while its tail is still the one given and
   * its status one of `statuses`, checked in the deleting transaction: a run that gained events
   * since it was archived stays. `updatedBefore` and `limit` are not used then.
   */
  runs?: ReadonlyArray<{ runId: string; tail: number }>
}

/** A run a store deleted: its id, the tail its log had and its last status. */
export interface DeletedRun {
  runId: string
  tail: number
  status: RunStatus | null
}

/** Live listener for appended events of one run (used for SSE). */
export type EventListener = (events: readonly EventEnvelope[]) => void

/**
 * What a store does beyond the five calls every store has (`append`, `read`, `tail`, `bounds`,
 * `listRuns`). A store declares each one it has in `capabilities`; an undeclared capability is
 * `false`. `createEngine` checks the declaration once, against the store's members and against
 * the options that need a capability, and the engine reads the checked declaration instead of
 * probing members (docs/storage.md, "Capabilities").
 */
export interface StoreCapabilities {
  /** `subscribe`: live listeners (SSE streams). */
  readonly subscribe: boolean
  /** `listSummaries`: pages of the run index; without it the engine folds every run to list. */
  readonly summaries: boolean
  /** `listRunsWithDeadlines`: boot finds due runs without folding every run. */
  readonly deadlines: boolean
  /** `trim`: removes events behind snapshots (`trimAfterSnapshot` needs it). */
  readonly trim: boolean
  /** `flush`: makes deferred appends durable; without it a deferred append needs nothing more. */
  readonly flush: boolean
  /** `snapshots`: an attached snapshot store; without it the engine keeps snapshots in memory. */
  readonly snapshots: boolean
  /** `leases`: run ownership across processes (`ownership` needs it). */
  readonly leases: boolean
  /** `feed`: committed events in commit order and checkpoints (projectors need it). */
  readonly feed: boolean
  /** `claims`: named claims for background work done by one process at a time. */
  readonly claims: boolean
  /** `schedules`: stored schedules; without it the engine holds them in memory. */
  readonly schedules: boolean
  /** `waitUrls`: stored wait URL tokens; without it the engine holds them in memory. */
  readonly waitUrls: boolean
  /** `flow`: flow control's queues (a definition with `flow` needs it). */
  readonly flow: boolean
  /** `workerTasks`: worker tasks kept in the store; without it they are kept in memory. */
  readonly workerTasks: boolean
  /** `deleteRun`: deletes one run whole (`engine.deleteRun` needs it). */
  readonly deleteRun: boolean
  /** `deleteFinished`: deletes a batch of finished runs (the retention sweep needs it). */
  readonly deleteFinished: boolean
  /** `countActiveRuns`: runs not yet finished per definition version (the boot's drift warning). */
  readonly countActiveRuns: boolean
  /** `restoreTrimmed`: writes a trimmed log back with its snapshot (restoring its archive). */
  readonly restoreTrimmed: boolean
  /** `idempotencyKeys`: lists and restores a run's recorded append keys (archives carry them). */
  readonly idempotencyKeys: boolean
}

/** An append's idempotency key as the store records it: the tail that append left. */
export interface RecordedKey {
  key: string
  seq: number
}

/**
 * A run's recorded append keys (docs/data-lifecycle.md, "Archives"): the archive reads them
 * with the log, and a restore writes them back, so another process's retry of an append the
 * original run took is refused by the store as it was before the run was deleted.
 */
export interface IdempotencyKeyStore {
  /** The run's keys, ordered by seq then key; none for a run the store does not hold. */
  list(runId: string): Promise<RecordedKey[]>
  /** Records the keys the run lacks (those it holds stay); nothing for a run not held. */
  restore(runId: string, keys: readonly RecordedKey[]): Promise<void>
}

/**
 * A log trimmed behind a snapshot, as `restoreTrimmed` writes it back: the snapshot covering
 * `events[0].seq - 1`, the events from there to the tail (their own seqs, ids and times) and the
 * meta the fold of both gives.
 */
export interface TrimmedLog {
  snapshot: Snapshot
  events: readonly EventEnvelope[]
  meta: RunMeta
  /** The run's attributes after its last event (the events that set them may be trimmed). */
  attributes?: RunAttributes
}

/**
 * The event store port (docs/storage.md). Envelopes arrive with their seq already assigned
 * (`expectedSeq + 1`, `+ 2`, …); the store checks the tail and writes atomically.
 */
export interface EventStore {
  append(runId: string, events: readonly EventEnvelope[], options: AppendOptions): Promise<void>
  read(runId: string, options?: ReadOptions): Promise<EventEnvelope[]>
  tail(runId: string): Promise<number>
  bounds(runId: string): Promise<LogBounds>
  listRuns(): Promise<string[]>
  /** Removes events with seq < beforeSeq; returns how many were removed. */
  trim?(runId: string, beforeSeq: number): Promise<number>
  /** Subscribes to events appended after this call; returns the unsubscribe function. */
  subscribe?(runId: string, listener: EventListener): () => void
  /**
   * One page of the latest meta per run (written by `append`), newest run first: runs are
   * ordered by when the store first wrote them, and the cursor is a position in that order
   * (`encodeSummaryCursor`), so a page never loads every run. The query is validated.
   */
  listSummaries?(query: StoreSummaryQuery): Promise<SummaryPage>
  /**
   * Deletes the run whole, in one transaction: events, idempotency keys, snapshots, lease,
   * meta and wait-URL tokens, and records the deletion in the feed. Null (nothing written)
   * when the store holds no such run, or its status is not among `statuses`.
   */
  deleteRun?(runId: string, options: DeleteRunOptions): Promise<DeletedRun | null>
  /** Deletes one batch of finished runs, each whole, in one transaction (as `deleteRun`). */
  deleteFinished?(query: FinishedRunsQuery): Promise<DeletedRun[]>
  /** Runs whose nextDeadlineAt is set (any value). */
  listRunsWithDeadlines?(): Promise<Array<{ runId: string; nextDeadlineAt: number }>>
  /** Runs not yet terminal, counted per definition version (the drift report, docs/deploys.md). */
  countActiveRuns?(): Promise<ActiveRunCount[]>
  /**
   * Writes a trimmed log back (restoring an archived run, docs/data-lifecycle.md "Restoring"):
   * the snapshot into the attached snapshot store, the events with their own seqs, the log's
   * head at `snapshot.seq + 1` and the meta, all in one transaction. Only for a run the store
   * holds no event of: otherwise SeqConflictError, and nothing is written.
   */
  restoreTrimmed?(runId: string, log: TrimmedLog): Promise<void>
  /** The run's recorded append keys (`idempotencyKeys` capability). */
  readonly idempotencyKeys?: IdempotencyKeyStore
  /**
   * Makes every append that resolved with `durability: 'deferred'` durable. Stores whose
   * appends are always durable (or never, like memory) leave it out.
   */
  flush?(): Promise<void>
  /** The store's attached snapshot store. */
  readonly snapshots?: SnapshotStore
  /** Run ownership across processes (docs/storage.md); stores several processes can share have it. */
  readonly leases?: LeaseStore
  /** Committed events in commit order and projector checkpoints (docs/projectors.md). */
  readonly feed?: ProjectionFeed
  /** Named claims: background work done by one process at a time (docs/storage.md). */
  readonly claims?: ClaimStore
  /** Schedules (docs/schedules.md); stores without it hold schedules in the engine's memory. */
  readonly schedules?: ScheduleStore
  /** Wait URL tokens (docs/schedules.md, "Wait URLs"). */
  readonly waitUrls?: WaitUrlStore
  /** What the store does beyond the five calls above; what is not declared is `false`. */
  readonly capabilities?: Partial<StoreCapabilities>
  /** Flow control's queues (docs/flow-control.md); a store without it refuses flow control. */
  readonly flow?: FlowStore
  /** Worker tasks not yet handed to a worker (docs/workers.md, "Durable tasks"). */
  readonly workerTasks?: WorkerTaskStore
  close?(): Promise<void>
}

export interface Snapshot {
  runId: string
  /** The snapshot covers events 1..seq. */
  seq: number
  createdAt: number
  /** Format version of `data`, decided by the writer (decisions.md, "The log protocol version"). */
  format: number
  data: Json
}

/**
 * Snapshot storage. `save` takes ownership of `snapshot.data` (the caller never changes it
 * afterwards); `latest` returns data the caller may mutate (a fresh copy or fresh parse).
 */
export interface SnapshotStore {
  save(snapshot: Snapshot): Promise<void>
  /**
   * Newest snapshot with seq <= atOrBefore (default: newest). With `readOnly` the caller
   * promises not to mutate the data, so a store may hand out shared data without copying.
   */
  latest(
    runId: string,
    atOrBefore?: number,
    options?: { readOnly?: boolean },
  ): Promise<Snapshot | null>
  /** Seqs of stored snapshots, ascending. */
  list(runId: string): Promise<number[]>
  /** Keeps the newest `keep` snapshots; returns how many were removed. */
  prune(runId: string, keep: number): Promise<number>
}

/** Time enters the engine only through a Clock (tests use a manual one). */
export interface Clock {
  now(): number
  setTimeout(callback: () => unknown, ms: number): unknown
  clearTimeout(handle: unknown): void
}

/** Identifier source (injected so tests can make ids deterministic). */
export interface Ids {
  runId(): string
  threadId(): string
  eventId(): string
  effectId(): string
  waitId(): string
  timerId(): string
}

/**
 * Wakes runs at durable deadlines. The engine tells it the earliest deadline of a run after
 * every operation; the scheduler calls `wake(runId)` when it falls due.
 */
export interface WakeScheduler {
  start(wake: (runId: string, dueAt: number) => Promise<unknown>, clock: Clock): void
  schedule(runId: string, at: number): void
  cancel(runId: string): void
  stop(): Promise<void> | void
}

// The worker port (docs/workers.md): what the engine hands an external executor
// of effects, and what that executor reports back.

/**
 * An external executor of effects (docs/workers.md). `dispatch` hands over one attempt after it
 * is recorded; a throw or rejection is a dispatch failure. `cancel` asks for an in-flight
 * attempt to stop (also called for an attempt that timed out, so a queue can drop it); it may
 * return `'cancelled'` when the attempt never started, which acknowledges the cancel at once.
 */
export interface Worker {
  handles?: readonly string[] | ((type: string) => boolean)
  dispatch(task: WorkerTask): unknown | Promise<unknown>
  cancel?(task: WorkerTask): unknown | Promise<unknown>
}

export interface WorkerCallbackInput {
  effectId: string
  attempt: number
  kind: 'started' | 'heartbeat' | 'complete' | 'fail' | 'cancelled'
  result?: Json
  events?: Array<{ type: string; payload?: Json }>
  error?: { code?: string; message: string; details?: Json } | string
  retryable?: boolean
}
