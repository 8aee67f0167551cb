import type {
  DefinitionInfo,
  EffectAttemptView,
  QueueInfo,
  ReplayStep,
  ResultOptions,
  RunOperationalStatus,
  StartOptions,
  StartRunArgs,
  VersionReport,
  WaitFor,
} from '../core/api-types.js'
import type { ArchivedRun, RestoredRun } from '../core/archive-types.js'
import type {
  CheckedSignals,
  Definition,
  DefinitionList,
  InputOf,
  ResultOf,
  RunOutputOf,
} from '../core/definition.js'
import type {
  EventEnvelope,
  EventInput,
  RunState,
  StartResult,
  ThreadState,
  TransientEvent,
} from '../core/envelope.js'
import type { ForkOptions, ForkResult } from '../core/fork-types.js'
import type { Json } from '../core/json.js'
import type { MigrateManyOptions, MigrateOptions, RunMigration } from '../core/migration-types.js'
import type {
  DeletedRun,
  EventStore,
  SummaryPage,
  SummaryQuery,
  Worker,
  WorkerCallbackInput,
  WorkerTask,
} from '../core/ports.js'
import type { ProjectionDefinition } from '../core/projection.js'
import type { ProjectorStatus } from '../core/projector-status.js'
import type { Registry } from '../core/registry.js'
import type { RetentionStatus } from '../core/retention-types.js'
import type { BulkOptions, BulkResult, RunFilter } from './bulk.js'
import type { DeleteRunOptions } from './run-delete.js'
import type { EngineSchedules, WaitUrlOutcome, WaitUrlRequest } from './schedule-api.js'

export interface SignalOptions extends CallerContext {
  /**
   * Identifies retries of this request within the run: the same key with the same events is a
   * no-op that returns the current state; with other events, `IDEMPOTENCY_CONFLICT`.
   */
  idempotencyKey?: string
  wait?: WaitFor
}

export interface StopOptions {
  /**
   * How long in-flight work (in-process attempts and the passes recording them) may go on
   * before it is aborted, in ms of the engine's clock. Default 0: abort at once (aborted
   * attempts run again after a restart, at-least-once as after a crash).
   */
  graceMs?: number
}

/**
 * The arguments of `start` after the definition: its input, typed by the definition's schema
 * (optional when the schema accepts `undefined`), then the options.
 */
export type StartArgs<D extends Definition> =
  undefined extends InputOf<D>
    ? [input?: InputOf<D>, options?: StartOptions]
    : [input: InputOf<D>, options?: StartOptions]

/** Calls a host makes around a start (the HTTP streaming start uses them). */
export interface StartHooks {
  /**
   * Called with the run's id — the caller's, or a new one from the engine's `ids` — before
   * anything is validated or written, so a host can subscribe to the run's events first.
   * A rejection fails the start with nothing written.
   */
  onRunId?(runId: string): void | Promise<void>
}

export interface ServeOptions {
  port?: number
  hostname?: string
  /** How long a request's headers may take to arrive (default 10 s). */
  headersTimeoutMs?: number
  /**
   * How long a whole request may take to arrive, body included (default 30 s); past it the
   * server answers 408 and closes the connection. Answering is not bounded by it.
   */
  requestTimeoutMs?: number
}

export interface ServerHandle {
  url: string
  port: number
  hostname: string
  close(): Promise<void>
}

export interface EngineRuntime {
  registry: Registry
  /** Resolves when no operation is queued or running on any run and no effect is in flight. */
  idle(): Promise<void>
  /** The configured worker (the HTTP task-claim route hands out an httpWorkerQueue's tasks). */
  readonly worker?: Worker
  /**
   * Records claimed tasks' attempts `started` before they are handed out; `stale` ones (their
   * attempt is over) are dropped (docs/workers.md, "Durable tasks"). Absent where no worker
   * queue can be configured (the actor host).
   */
  startClaimedTasks?(
    tasks: readonly WorkerTask[],
  ): Promise<{ ready: WorkerTask[]; stale: WorkerTask[] }>
  /**
   * Stores the task of each of the run's attempts recorded `dispatched` whose task the store
   * lacks (a host killed between the two), in the run's queue under its lease; never a second
   * row, never one for a `started` attempt. A booting engine does this for every running run
   * (docs/workers.md, "Durable tasks").
   */
  restoreWorkerTasks?(runId: string): Promise<void>
}

/** Identity of whoever asked (HTTP auth identity, or a name for embed callers). */
export interface CallerContext {
  identity?: Json
}

export interface EngineReady {
  store: EventStore
  runtime: EngineRuntime
}

/**
 * `engine.ready()`: resolves once the store is open, modules are composed, recovery has
 * started and (with the `serve` option) the server listens; rejects with the reason
 * otherwise. Awaiting it without the call, `await engine.ready`, waits for the same.
 */
export interface ReadyFunction extends PromiseLike<EngineReady> {
  (): Promise<EngineReady>
}

/**
 * The embed API. `Defs`, the definitions as a type (`createEngine<typeof definitions>`), types
 * `signal`'s declared payloads as the typed client's are typed (docs/workflows.md, "Signals");
 * without it, any payload compiles and the run's schemas check it at run time.
 */
export interface Engine<Defs extends DefinitionList = DefinitionList> {
  readonly ready: ReadyFunction
  /** `state.output` is typed by the definition's output (`Json` for an untyped one). */
  start<D extends Definition>(
    definition: D,
    ...args: StartArgs<D>
  ): Promise<StartResult<RunOutputOf<D>>>
  startRun(args: StartRunArgs, hooks?: StartHooks): Promise<StartResult>
  getRun(runId: string): Promise<RunState>
  /**
   * With the run's definition, `output` is typed by it; a run of another definition (kind and
   * name) is refused with INVALID_REQUEST, so the type holds.
   */
  getRun<D extends Definition>(runId: string, definition: D): Promise<RunState<RunOutputOf<D>>>
  /**
   * Resolves with the run's output once it completes; rejects with RUN_FAILED (the run's error
   * in `details.error`) or RUN_CANCELLED, or with RESULT_TIMEOUT once `timeoutMs` passes first.
   * Works for a run another process drives on a shared store (docs/operating-runs.md).
   */
  /**
   * With the run's definition: its output typed, and checked first as `getRun` checks it.
   * (First: a definition object would also pass for the options.)
   */
  result<D extends Definition>(
    runId: string,
    definition: D,
    options?: ResultOptions,
  ): Promise<ResultOf<D>>
  result(runId: string, options?: ResultOptions): Promise<Json | undefined>
  getEvents(runId: string, options?: { fromSeq?: number; limit?: number }): Promise<EventEnvelope[]>
  /**
   * Appends events and wakes the run. An event of a signal type one of `Defs` declares must
   * carry that signal's payload; other types (module inputs, application events) compile as
   * written.
   */
  signal<const E extends readonly EventInput[]>(
    runId: string,
    events: E & CheckedSignals<E, Defs>,
    options?: SignalOptions,
  ): Promise<RunState>
  wake(runId: string): Promise<RunState>
  cancel(runId: string, threadId?: string): Promise<RunState>
  listRuns(): Promise<string[]>
  /**
   * Retries the failed, timed-out and ambiguous effects of every run matching `filter` (not
   * empty), oldest first, in bounded batches; `dryRun` only counts (docs/operating-runs.md).
   */
  retryMany(filter: RunFilter, options?: BulkOptions): Promise<BulkResult>
  /** Wakes every run matching `filter` (not empty), like `wake` run by run. */
  wakeMany(filter: RunFilter, options?: BulkOptions): Promise<BulkResult>
  /** Cancels every run matching `filter` (not empty), like `cancel` run by run. */
  cancelMany(filter: RunFilter, options?: BulkOptions): Promise<BulkResult>
  /**
   * Moves a run not yet finished to another version of its definition when its recorded
   * progress fits it, else MIGRATION_REFUSED with the differences and nothing written; `dryRun`
   * only checks (docs/deploys.md, "Migrating runs").
   */
  migrateRun(runId: string, options: MigrateOptions, caller?: CallerContext): Promise<RunMigration>
  /**
   * `migrateRun` for every run matching `filter` (it names the definition; without a status,
   * the runs not yet finished), oldest first, in bounded batches (docs/operating-runs.md).
   */
  migrateRuns(
    filter: RunFilter,
    options: MigrateManyOptions,
    caller?: CallerContext,
  ): Promise<BulkResult>
  /** One page of run summaries, newest first; pass `nextCursor` back as `cursor` for the next. */
  listRunSummaries(query?: SummaryQuery): Promise<SummaryPage>
  /** The registered definitions, with input schemas as JSON Schema where available. */
  listDefinitions(): Promise<DefinitionInfo[]>
  /** Flow control's queues, per key: limit, active, queued, oldest wait (docs/flow-control.md). */
  queues(): Promise<QueueInfo[]>
  /**
   * The drift report (docs/deploys.md): runs not yet terminal per definition version on the
   * whole store, beside what this host registers, and which versions are safe to remove.
   */
  versions(): Promise<VersionReport>
  /** A projection object gives the value's type (`S`); by name the value is untyped. */
  project<S = any>(runId: string, projection: ProjectionDefinition<S> | string): Promise<S>
  replayTo(runId: string, seq: number): Promise<ReplayStep | null>
  inspectRun(runId: string): Promise<RunOperationalStatus>
  listEffects(runId: string): Promise<EffectAttemptView[]>
  listThreads(runId: string): Promise<ThreadState[]>
  retryEffect(runId: string, effectId: string, caller?: CallerContext): Promise<RunState>
  /**
   * A worker attempt stuck `dispatched` or `started`: a new attempt is dispatched at once,
   * whatever the retry policy says (docs/workers.md, "Stuck attempts").
   */
  requeueEffect(runId: string, effectId: string, caller?: CallerContext): Promise<RunState>
  /** A worker attempt stuck `dispatched` or `started` fails; the retry policy decides. */
  failEffect(runId: string, effectId: string, caller?: CallerContext): Promise<RunState>
  /**
   * Deletes the run whole: its log, snapshots, keys, lease, meta and wait-URL tokens, recorded
   * for projectors (docs/data-lifecycle.md). RUN_NOT_FOUND for an unknown run; RUN_NOT_FINISHED
   * for one still running, unless `force`.
   */
  deleteRun(runId: string, options?: DeleteRunOptions): Promise<DeletedRun>
  /**
   * Brings an archived run back into the store with the same events, seqs, ids and times
   * (docs/data-lifecycle.md, "Restoring"); START_CONFLICT when the store holds another run
   * with its id, a no-op (`restored: false`) when it holds this one.
   */
  restoreRun(run: ArchivedRun): Promise<RestoredRun>
  /**
   * A new run whose log is `runId`'s before a cut (`atSeq`, or `atNode`: before the node's first
   * event), recorded with a link to the source, then going on with the registered code; the
   * source is only read (docs/operating-runs.md, "Fork").
   */
  fork(runId: string, options: ForkOptions): Promise<ForkResult>
  workerCallback(runId: string, input: WorkerCallbackInput): Promise<RunState>
  rescanTimers(): Promise<number>
  recoverDeadlines(): Promise<number>
  /** The retention sweep's options and last sweep (docs/data-lifecycle.md, "Retention"). */
  retention(): Promise<RetentionStatus>
  /** Each registered projector's state, checkpoint, lag and last error (docs/projectors.md). */
  projectors(): Promise<ProjectorStatus[]>
  /** Transient (never stored) events of a run published after the call; returns unsubscribe. */
  subscribeTransient(runId: string, listener: (event: TransientEvent) => void): () => void
  /** Live events of a run appended after the call (for SSE); returns unsubscribe. */
  subscribe(
    runId: string,
    listener: (events: readonly EventEnvelope[]) => void,
  ): Promise<() => void>
  fetch(request: Request): Promise<Response | null>
  serve(options?: ServeOptions): Promise<ServerHandle>
  stop(options?: StopOptions): Promise<void>
  readonly runtime: Promise<EngineRuntime>
  readonly store: Promise<EventStore>
  /**
   * What `POST /wait-urls/:token` does: completes the token's wait with the posted JSON, or
   * refuses (WAIT_URL_NOT_FOUND, WAIT_URL_GONE, SIGNATURE_INVALID, INVALID_EVENT) writing nothing.
   */
  completeWaitUrl(token: string, request: WaitUrlRequest): Promise<WaitUrlOutcome>
  /** Schedules: create, change, pause, trigger, backfill (docs/schedules.md). */
  readonly schedules: EngineSchedules
}
