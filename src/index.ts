// The root `skein` entry: the engine, the public module API, stores in memory, errors, types.

export type {
  DefinitionInfo,
  EffectAttemptView,
  EffectStatusView,
  QueueInfo,
  ReplayStep,
  ResultOptions,
  RunOperationalStatus,
  StartOptions,
  StartRunArgs,
  WaitFor,
} from './core/api-types.js'
export {
  ARCHIVE_FORMAT,
  type ArchivedRun,
  type ArchiveSink,
  type RestoredRun,
} from './core/archive-types.js'
export type { BulkItem, BulkOptions, BulkResult, RunFilter } from './core/bulk-types.js'
export {
  type ClaimAttempt,
  type ClaimDecision,
  decideClaim,
  type HeldClaim,
} from './core/claim-rule.js'
export type {
  DefinitionList,
  DefinitionName,
  DefinitionNamed,
  ResultOf,
  RunOutputOf,
  SignalEventOf,
  SignalPayloads,
} from './core/definition.js'
export type {
  EventOrigin,
  RunState,
  RunStatus,
  StartResult,
  ThreadState,
  ThreadStatus,
  TransientEvent,
} from './core/envelope.js'
export type { EngineErrorCode, SkeinErrorClass } from './core/errors.js'
export {
  CompositionError,
  DefinitionChangedError,
  DefinitionNotFoundError,
  DeterminismError,
  EffectNotFoundError,
  EffectNotRetryableError,
  EngineStoppedError,
  FlowKeyFullError,
  IdempotencyConflictError,
  InvalidEventError,
  InvalidRequestError,
  InvalidScheduleError,
  LeaseLostError,
  MigrationRefusedError,
  NotConfiguredError,
  PayloadUndecodableError,
  PortInUseError,
  ProjectionNotFoundError,
  ProjectionUnavailableError,
  ResultTimeoutError,
  RunCancelledError,
  RunFailedError,
  RunNotFoundError,
  RunOverloadedError,
  ScheduleExistsError,
  ScheduleNotFoundError,
  SeqConflictError,
  ServeError,
  SignatureInvalidError,
  StartConflictError,
  StoreError,
  StoreUnavailableError,
  UnsupportedProtocolError,
  WaitUrlGoneError,
  WaitUrlNotFoundError,
  WakeLimitError,
} from './core/errors.js'
export type { ForkedFrom, ForkOptions, ForkResult } from './core/fork-types.js'
export type { MigrateManyOptions, MigrateOptions, RunMigration } from './core/migration-types.js'
// The module API (core/module-api.ts), which the built-in modules are built on too.
export {
  asRuntimeEvent,
  type CatalogEntry,
  type Command,
  commands,
  type DecideContext,
  type Definition,
  DefinitionError,
  type DefinitionRef,
  defineEffect,
  defineInput,
  defineKind,
  defineModule,
  defineProjection,
  type EffectConfig,
  type EffectContext,
  type EffectDefinition,
  type EffectExecutionMode,
  type ErrorInfo,
  type EventEnvelope,
  type EventInput,
  type FlowControl,
  formatIssues,
  type InferInput,
  type InferOutput,
  type InputArgs,
  type InputContext,
  type InputEvent,
  type InputOf,
  type InputWaiter,
  InvalidInputError,
  inputJsonSchema,
  type Json,
  type JsonObject,
  type KindContext,
  type KindDefinition,
  type MigrationDifference,
  type Module,
  type ModuleConfig,
  type Outcome,
  type OutputOf,
  type ProjectionDefinition,
  payload,
  type RetryPolicy,
  type RunAttributeTypes,
  type RunAttributeValue,
  type RuntimeEvent,
  type RuntimeEventPayloads,
  RuntimeEvents,
  type RuntimeEventType,
  type SignalSchemas,
  SkeinError,
  type StandardIssue,
  type StandardSchema,
  TerminalError,
  toErrorInfo,
  WAIT_URL_KEY,
  type WaitCondition,
  type WaitUrl,
  type WaitUrlOptions,
  waitUrl,
} from './core/module-api.js'
export {
  type CodecContext,
  decodeEvent,
  encodeEvent,
  type PayloadCodec,
} from './core/payload-codec.js'
export type {
  AdmitRequest,
  AppendAdmission,
  AppendOptions,
  Claim,
  ClaimStore,
  Clock,
  DeletedRun,
  DeleteRunOptions as StoreDeleteRunOptions,
  EventStore,
  FeedEntry,
  FinishedRunsQuery,
  FlowEntry,
  FlowKeyState,
  FlowStore,
  Ids,
  Lease,
  LeaseClaim,
  LeaseStore,
  LogBounds,
  OrphanedWindow,
  ProjectionFeed,
  ProjectorCheckpoint,
  ReadOptions,
  RunMeta,
  RunSummary,
  ScheduleRecord,
  ScheduleStore,
  Snapshot,
  SnapshotStore,
  StoreCapabilities,
  StoredWorkerTask,
  StoreSummaryQuery,
  SummaryPage,
  SummaryQuery,
  TrimmedLog,
  WaitUrlRecord,
  WaitUrlStore,
  WakeScheduler,
  Worker,
  WorkerCallbackInput,
  WorkerTask,
  WorkerTaskClaimQuery,
  WorkerTaskKey,
  WorkerTaskStore,
} from './core/ports.js'
export {
  defineProjector,
  type ProjectorBatch,
  type ProjectorContext,
  type ProjectorDefinition,
} from './core/projector.js'
export type {
  ProjectorOptions,
  ProjectorState,
  ProjectorStatus,
} from './core/projector-status.js'
export type {
  RetentionOptions,
  RetentionStatus,
  RetentionSweep,
} from './core/retention-types.js'
export { RUN_DELETED, type RunDeletedPayload } from './core/run-deletion.js'
export {
  indexEvent,
  type RunIndex,
  type RunIndexEntry,
  type RunIndexOptions,
  type RunIndexPage,
  type RunIndexQuery,
  type TenantOf,
} from './core/run-index.js'
export { decodeEvents } from './core/sealed-batches.js'
export {
  CAPABILITY_MEMBERS,
  type StoreCapability,
  storeCapabilities,
} from './core/store-capabilities.js'
export { decodeSummaryCursor, encodeSummaryCursor } from './core/summaries.js'
export { createEngine } from './create-engine.js'
export type { EngineOptions } from './engine-options.js'
export type { Access, AuthorizeContext, AuthorizeHook, AuthorizeResult } from './http/authorize.js'
export { bearerAuth } from './http/bearer-auth.js'
export type { DebuggerContext, DebuggerHost, HttpOptions } from './http/http-options.js'
export {
  type FetchHandler,
  type NodeMiddleware,
  type NodeRequestLike,
  type NodeResponseLike,
  toNodeMiddleware,
} from './http/node-middleware.js'
export type { SseOptions } from './http/sse-limits.js'
export {
  type ErrorCode,
  HTTP_STATUS_BY_CODE,
  type HttpErrorCode,
  httpStatusOf,
} from './http/wire/status.js'
export {
  AES_GCM,
  type AesGcmCodecOptions,
  type AesGcmStored,
  aesGcmCodec,
} from './runtime/aes-gcm-codec.js'
export { type ConsoleLoggerOptions, consoleLogger } from './runtime/console-logger.js'
export type { EngineSchedules, ScheduleTickerOptions } from './runtime/engine-schedules.js'
export type {
  CallerContext,
  Engine,
  EngineReady,
  EngineRuntime,
  ReadyFunction,
  ServeOptions,
  ServerHandle,
  SignalOptions,
  StartArgs,
  StartHooks,
  StopOptions,
} from './runtime/engine-types.js'
export { type JsonlArchiveOptions, jsonlArchive, readArchive } from './runtime/jsonl-archive.js'
export { localScheduler } from './runtime/local-scheduler.js'
export type { LogFn, Logger, LogLevel } from './runtime/logger.js'
export type {
  EngineLimits,
  Observation,
  OwnershipOptions,
  RuntimeObserver,
  RuntimeOptions,
  TrimCoverage,
  TrimCoverageFunction,
  TrimOptions,
} from './runtime/options.js'
export type { DeleteRunOptions } from './runtime/run-delete.js'
export type {
  BackfillResult,
  ScheduleInfo,
  ScheduleUpdate,
} from './runtime/schedule-service.js'
export {
  type CatchUpPolicy,
  defineSchedule,
  type OverlapPolicy,
  type ScheduleDefinition,
  type ScheduleInput,
  type ScheduleOptions,
  type ScheduleSpec,
  type ScheduleStart,
  type ScheduleTick,
} from './runtime/schedule-spec.js'
export type { ScheduleRunEntry, ScheduleState, StartReason } from './runtime/schedule-state.js'
export { memoryRunIndex } from './stores/memory/memory-run-index.js'
export { memorySnapshotStore } from './stores/memory/memory-snapshot-store.js'
export { memoryStore } from './stores/memory/memory-store.js'
export type {
  HttpWorkerContext,
  HttpWorkerHandle,
  HttpWorkerOptions,
  HttpWorkerOutcome,
} from './workers/http-worker.js'
export { runHttpWorker } from './workers/http-worker.js'
export type { ClaimOptions, HttpWorkerQueue } from './workers/worker-queue.js'
export { httpWorkerQueue } from './workers/worker-queue.js'
