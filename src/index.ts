// The root `skein` entry: the engine, the public module API, stores in memory, errors, types.

export type { Command, Outcome, WaitCondition } from './core/commands.js'
export { commands } from './core/commands.js'
export type { Definition, DefinitionRef } from './core/definition.js'
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
export type { ErrorInfo } from './core/errors.js'
export {
  CompositionError,
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
  ProjectionNotFoundError,
  RunNotFoundError,
  RunOverloadedError,
  SeqConflictError,
  SkeinError,
  StartConflictError,
  StoreError,
  StoreUnavailableError,
  TerminalError,
  WakeLimitError,
} from './core/errors.js'
export type { Json, JsonObject } from './core/json.js'
export type { DecideContext, KindContext, KindDefinition } from './core/kind.js'
export { defineKind } from './core/kind.js'
export type { Module, ModuleConfig } from './core/module.js'
export { defineModule } from './core/module.js'
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
export { createEngine } from './create-engine.js'
export { bearerAuth } from './http/bearer-auth.js'
export type {
  CallerContext,
  EffectAttemptView,
  EffectStatusView,
  Engine,
  EngineRuntime,
  ReplayStep,
  RunOperationalStatus,
  ServeOptions,
  ServerHandle,
  StartOptions,
  StartRunArgs,
} from './runtime/engine-types.js'
export { localScheduler } from './runtime/local-scheduler.js'
export type {
  Access,
  AuthorizeContext,
  AuthorizeHook,
  AuthorizeResult,
  DebuggerHost,
  EngineLimits,
  EngineOptions,
  Observation,
  RuntimeObserver,
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
