import type { Definition } from '../core/definition.js'
import type { Json } from '../core/json.js'
import type { Module } from '../core/module.js'
import type { Clock, EventStore, Ids, SnapshotStore, WakeScheduler } from '../core/ports.js'
import type { Logger } from './logger.js'

/** Where and how `serve` (and the `serve` option) listens. */
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

/** The value `trimAfterSnapshot.coverage(runId)` resolves to: events up to this seq are safe elsewhere. */
export type TrimCoverage = number | { throughSeq: number } | null

export interface TrimOptions {
  /** Snapshots kept per run; events older than the oldest kept one may be removed. */
  keepSnapshots: number
  /** Proves downstream projectors/archives hold events through a seq; trimming stops there. */
  coverage?: (runId: string) => TrimCoverage | Promise<TrimCoverage>
}

/** One attempt of an effect handed to a worker. `effectId` is the idempotency key to use. */
export interface WorkerTask {
  runId: string
  effectId: string
  attempt: number
  type: string
  input: Json
  /** The thread that asked (a worker can watch it to notice a cancellation). */
  threadId?: string
  /** When the attempt's schedule-to-start (or start-to-close) deadline passes, if any. */
  deadlineAt?: number | null
}

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

export type Access = 'read' | 'write' | 'worker' | 'operations'

export interface AuthorizeContext {
  route: string
  access: Access
  runId?: string
  name?: string
}

export type AuthorizeResult = true | { identity: Json } | Response
export type AuthorizeHook = (
  request: Request,
  context: AuthorizeContext,
) => AuthorizeResult | Promise<AuthorizeResult>

/** What a debugger UI's `fetch` receives beside the request. */
export interface DebuggerContext {
  basePath: string
  /** The engine's registered definitions (a UI draws workflow graphs from them). */
  definitions?: () => Promise<readonly Definition[]>
}

export interface DebuggerHost {
  basePath: string
  ui: { fetch(request: Request, context: DebuggerContext): Response | Promise<Response> }
}

/**
 * One observation: failure-isolated, never affects a run. Engine-wide observations
 * (`boot.failed`, `serve.failed`) carry an empty `runId`.
 */
export interface Observation {
  type:
    | 'boot.failed'
    | 'run.started'
    | 'wake.started'
    | 'wake.finished'
    | 'wake.failed'
    | 'serve.failed'
    | 'run.parked'
    | 'append'
    | 'snapshot.loaded'
    | 'snapshot.saved'
    | 'snapshot.trimmed'
    | 'timer.fired'
    | 'effect.attempt'
    | 'effect.retry'
    | 'effect.timeout'
    | 'effect.interrupted'
  runId: string
  at: number
  [field: string]: unknown
}

export type RuntimeObserver =
  | ((observation: Observation) => unknown)
  | { observe(observation: Observation): unknown }

/** Bounds of live event streams (docs/http.md, "Limits of live streams"). */
export interface SseOptions {
  /** Interval between `: keepalive` comments (default 15 s). */
  keepaliveMs?: number
  /**
   * A consumer that leaves written frames untaken this long is dropped, its queued frames
   * discarded; it resumes with Last-Event-ID and loses nothing (default 30 s).
   */
  drainTimeoutMs?: number
  /** Bytes queued for one consumer before a live event ends its stream (default 4 MiB). */
  maxBufferedBytes?: number
  /** Frames queued for one consumer before a live event ends its stream (default 1,000). */
  maxBufferedEvents?: number
  /** Bytes queued across all streams; past it, streams holding some are dropped (default 64 MiB). */
  maxTotalBufferedBytes?: number
  /** Bytes one catch-up page may hold even if every event is `maxEventBytes` (default 4 MiB). */
  pageBytes?: number
  /** Most events one catch-up page reads (default 500). */
  pageSize?: number
}

/** The HTTP API's options (`createEngine({ http })`). */
export interface HttpOptions {
  /**
   * Serve the API under this path (e.g. `/skein`: `GET /skein/runs/:id`); paths outside it are
   * left to the host app (`fetch` returns null). Default: at the root.
   */
  basePath?: string
  sse?: SseOptions
}

export interface EngineLimits {
  /** Largest serialized event payload accepted (default 1 MiB). */
  maxEventBytes?: number
  /** Largest HTTP request body (default 1 MiB). */
  maxRequestBytes?: number
}

export type StoreOption =
  | EventStore
  | Promise<EventStore>
  | (() => Promise<EventStore> | EventStore)

export interface EngineOptions {
  modules?: readonly Module[]
  store?: StoreOption
  serve?: boolean | ServeOptions
  maxWakeIterations?: number
  maxPendingRunOperations?: number
  snapshotEvery?: number
  snapshotStore?: SnapshotStore
  trimAfterSnapshot?: TrimOptions
  runCacheSize?: number
  rescanTimers?: boolean
  scheduler?: WakeScheduler
  worker?: Worker
  observer?: RuntimeObserver
  /**
   * Structured logger (pino-compatible: `{ debug, info, warn, error }`, each `(fields, msg?)`).
   * Default: none, the library prints nothing. See docs/operations.md, "Logs".
   */
  logger?: Logger
  authorize?: AuthorizeHook
  debugger?: DebuggerHost
  http?: HttpOptions
  clock?: Clock
  ids?: Ids
  limits?: EngineLimits
}

export interface ResolvedOptions {
  maxWakeIterations: number
  maxPendingRunOperations: number
  snapshotEvery: number
  runCacheSize: number
  rescanTimers: boolean
  maxEventBytes: number
  maxRequestBytes: number
}

export const MIB = 1024 * 1024

export function resolveOptions(options: EngineOptions): ResolvedOptions {
  const int = (name: string, value: number | undefined, fallback: number, min: number) => {
    const v = value ?? fallback
    if (!Number.isInteger(v) || v < min) {
      throw new TypeError(`createEngine: ${name} must be an integer >= ${min}, got ${value}`)
    }
    return v
  }
  return {
    maxWakeIterations: int('maxWakeIterations', options.maxWakeIterations, 100, 1),
    maxPendingRunOperations: int(
      'maxPendingRunOperations',
      options.maxPendingRunOperations,
      256,
      1,
    ),
    snapshotEvery: int('snapshotEvery', options.snapshotEvery, 200, 0),
    runCacheSize: int('runCacheSize', options.runCacheSize, 0, 0),
    rescanTimers: options.rescanTimers ?? true,
    maxEventBytes: int('limits.maxEventBytes', options.limits?.maxEventBytes, MIB, 1),
    maxRequestBytes: int('limits.maxRequestBytes', options.limits?.maxRequestBytes, MIB, 1),
  }
}
