// The root `skein` entry: the engine, the public module API, stores in memory, errors, types.

export type { Command, Outcome, WaitCondition } from './core/commands.js'
export { commands } from './core/commands.js'
export type { Definition, DefinitionRef, InputArgs, InputOf, OutputOf } from './core/definition.js'
export type {
  EffectConfig,
  EffectContext,
  EffectDefinition,
  EffectExecutionMode,
} from './core/effect.js'
export { defineEffect } from './core/effect.js'
export type {
  EventEnvelope,
  EventInput,
  EventOrigin,
  RunState,
  RunStatus,
  StartResult,
  ThreadState,
  ThreadStatus,
  TransientEvent,
} from './core/envelope.js'
export type { ErrorInfo, SkeinErrorClass } from './core/errors.js'
export {
  CompositionError,
  DefinitionChangedError,
  DefinitionError,
  DefinitionNotFoundError,
  DeterminismError,
  EffectNotFoundError,
  EffectNotRetryableError,
  EngineStoppedError,
  HTTP_STATUS_BY_CODE,
  httpStatusOf,
  IdempotencyConflictError,
  InvalidEventError,
  InvalidInputError,
  InvalidRequestError,
  NotConfiguredError,
  PortInUseError,
  ProjectionNotFoundError,
  ProjectionUnavailableError,
  RunNotFoundError,
  RunOverloadedError,
  SeqConflictError,
  ServeError,
  SkeinError,
  StartConflictError,
  StoreError,
  StoreUnavailableError,
  TerminalError,
  UnsupportedProtocolError,
  WakeLimitError,
} from './core/errors.js'
export type { Json, JsonObject } from './core/json.js'
export type { DecideContext, KindContext, KindDefinition } from './core/kind.js'
export { defineKind } from './core/kind.js'
export type {
  CatalogEntry,
  InputContext,
  InputEvent,
  InputWaiter,
  Module,
  ModuleConfig,
} from './core/module.js'
export { defineInput, defineModule } from './core/module.js'
export type {
  AppendOptions,
  Clock,
  EventStore,
  Ids,
  LogBounds,
  ReadOptions,
  RunMeta,
  RunSummary,
  Snapshot,
  SnapshotStore,
  WakeScheduler,
} from './core/ports.js'
export type { ProjectionDefinition } from './core/projection.js'
export { defineProjection } from './core/projection.js'
export type { RetryPolicy } from './core/retry.js'
export { RT as RuntimeEvents } from './core/runtime-events.js'
export type { InferInput, InferOutput, StandardSchema } from './core/schema.js'
export { payload } from './core/schema.js'
export type { StoreSummaryQuery, SummaryPage, SummaryQuery } from './core/summaries.js'
export { decodeSummaryCursor, encodeSummaryCursor } from './core/summaries.js'
export { createEngine } from './create-engine.js'
export { bearerAuth } from './http/bearer-auth.js'
export {
  type FetchHandler,
  type NodeMiddleware,
  type NodeRequestLike,
  type NodeResponseLike,
  toNodeMiddleware,
} from './http/node-middleware.js'
export { type ConsoleLoggerOptions, consoleLogger } from './runtime/console-logger.js'
export type {
  CallerContext,
  DefinitionInfo,
  EffectAttemptView,
  EffectStatusView,
  Engine,
  EngineReady,
  EngineRuntime,
  ReadyFunction,
  ReplayStep,
  RunOperationalStatus,
  ServeOptions,
  ServerHandle,
  SignalOptions,
  StartArgs,
  StartHooks,
  StartOptions,
  StartRunArgs,
  StopOptions,
  WaitFor,
} from './runtime/engine-types.js'
export { localScheduler } from './runtime/local-scheduler.js'
export type { LogFn, Logger, LogLevel } from './runtime/logger.js'
export type {
  Access,
  AuthorizeContext,
  AuthorizeHook,
  AuthorizeResult,
  DebuggerContext,
  DebuggerHost,
  EngineLimits,
  EngineOptions,
  HttpOptions,
  Observation,
  RuntimeObserver,
  SseOptions,
  TrimCoverage,
  TrimOptions,
  Worker,
  WorkerCallbackInput,
  WorkerTask,
} from './runtime/options.js'
export type {
  HttpWorkerContext,
  HttpWorkerHandle,
  HttpWorkerOptions,
  HttpWorkerOutcome,
} from './runtime/worker-http-client.js'
export { runHttpWorker } from './runtime/worker-http-client.js'
export type { ClaimOptions, HttpWorkerQueue } from './runtime/worker-queue.js'
export { httpWorkerQueue } from './runtime/worker-queue.js'
export { memorySnapshotStore } from './stores/memory/memory-snapshot-store.js'
export { memoryStore } from './stores/memory/memory-store.js'
