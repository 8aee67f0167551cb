import type { Module } from '../core/module.js'
import type { PayloadCodec } from '../core/payload-codec.js'
import type { Clock, EventStore, Ids, SnapshotStore, WakeScheduler, Worker } from '../core/ports.js'
import type { ProjectorDefinition } from '../core/projector.js'
import type { ProjectorOptions } from '../core/projector-status.js'
import type { RetentionOptions } from '../core/retention-types.js'
import type { Logger } from './logger.js'
import type { ScheduleTickerOptions, WaitUrlConfig } from './schedule-api.js'
import type { ScheduleDefinition } from './schedule-spec.js'

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

export type TrimCoverageFunction = (runId: string) => TrimCoverage | Promise<TrimCoverage>

export interface TrimOptions {
  /** Snapshots kept per run; events older than the oldest kept one may be removed. */
  keepSnapshots: number
  /**
   * Proves downstream projectors/archives hold events through a seq; trimming stops there.
   * Either a function, or the names of registered projectors: trimming then never removes an
   * event one of them has not checkpointed.
   */
  coverage?: TrimCoverageFunction | readonly string[]
}

/** `TrimOptions` as the runtime uses it: projector names turned into a coverage function. */
export interface ResolvedTrim {
  keepSnapshots: number
  coverage?: TrimCoverageFunction
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
    | 'effect.settled'
    | 'run.finished'
    | 'http.request'
    | 'http.response'
    | 'lease.lost'
    | 'projector.lag'
    | 'projector.failed'
    | 'projector.recovered'
    | 'schedule.tick'
    | 'retention.batch'
    | 'flow.admitted'
    | 'flow.depth'
  runId: string
  at: number
  [field: string]: unknown
}

export type RuntimeObserver =
  | ((observation: Observation) => unknown)
  | {
      observe(observation: Observation): unknown
      /**
       * Track which HTTP request caused each run operation: `wake.started` then names it
       * (`cause`, the `requestId` of `http.request`). Costs an AsyncLocalStorage (on Node 20,
       * promise hooks for the whole process); skein/otel's observer sets it.
       */
      traceCauses?: boolean
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

/**
 * The engine options the runtime reads (docs/engine.md); `EngineOptions`
 * (src/engine-options.ts) adds those of the HTTP layer and the server.
 */
export interface RuntimeOptions {
  modules?: readonly Module[]
  store?: StoreOption
  maxWakeIterations?: number
  maxPendingRunOperations?: number
  snapshotEvery?: number
  snapshotStore?: SnapshotStore
  trimAfterSnapshot?: TrimOptions
  /**
   * Post-commit projectors (`defineProjector`, docs/projectors.md): each receives every run's
   * committed events in seq order, at least once, off the commit path. The store must have a
   * projection feed (memory, SQLite and Postgres do).
   */
  projectors?: readonly ProjectorDefinition[]
  /** How projectors are worked: claim lease, polling, batch size, backoff, failing threshold. */
  projectorOptions?: ProjectorOptions
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
  clock?: Clock
  ids?: Ids
  limits?: EngineLimits
  /**
   * One writer per run across processes sharing the store (docs/storage.md). On by
   * default for a store other processes can open (a SQLite file, Postgres: its leases are
   * `shared`), off for the memory store; pass options to tune it, `false` to turn it off.
   */
  ownership?: OwnershipOptions | false
  /**
   * Schedules defined in code (`defineSchedule`, docs/schedules.md): registered in the store at
   * boot (a stored one takes the code's definition and keeps its pause and progress).
   */
  schedules?: readonly ScheduleDefinition[]
  /** How schedules are ticked: polling, the ticker's claim, the outage grace. */
  scheduleOptions?: ScheduleTickerOptions
  /**
   * Deletes finished runs once they are older than `finishedAfterMs`, in a background sweep
   * one process at a time (docs/data-lifecycle.md, "Retention").
   */
  retention?: RetentionOptions
  /**
   * Encodes event payloads, snapshot data and worker task inputs before the store keeps them,
   * and decodes them on every read (`aesGcmCodec`, docs/data-lifecycle.md, "Payloads encrypted
   * at rest"). Projectors see decoded events; the NATS replica publishes encoded ones.
   */
  codec?: PayloadCodec
  /** Wait URLs: their public base URL and the host's signature secret (docs/schedules.md). */
  waitUrls?: WaitUrlConfig
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

export function resolveOptions(options: RuntimeOptions): ResolvedOptions {
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

/** `createEngine({ ownership })` (docs/engine.md, "Several processes on one store"). */
export interface OwnershipOptions {
  /** This engine's owner id, unique among live processes; default `<host>:<pid>:<random>`. */
  owner?: string
  /** How long a lease lasts without renewal; default 10 000 ms. */
  leaseMs?: number
  /** How often a held lease is renewed while attempts are in flight; default leaseMs / 3. */
  renewMs?: number
  /** How often due deadlines are claimed from the store (`claimDue`); default 500 ms. */
  pollMs?: number
  /**
   * Whether this engine claims due runs from the store (every `pollMs`); default true. `false`
   * when something else claims for it: the actor host over shared cells claims for its cells.
   */
  claimDue?: boolean
  /**
   * How long a call waits for a run another process owns to be let go before it fails with
   * LEASE_LOST (503, retry later); default 30 000 ms.
   */
  waitMs?: number
  /**
   * Whether an owner id names a process known to be gone (then its lease counts as expired at
   * once). Default: an owner on this host whose pid no longer exists.
   */
  isGone?: (owner: string) => boolean
}
