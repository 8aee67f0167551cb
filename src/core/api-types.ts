import type { RunAttributes } from './attributes.js'
import type { EventEnvelope, RunState, ThreadState } from './envelope.js'
import type { ErrorInfo } from './errors.js'
import type { EffectStatus } from './fold/index.js'
import type { Json, JsonObject } from './json.js'
import type { WaitOn } from './runtime-events.js'

// Shapes the engine API takes and returns (docs/engine.md, docs/http.md): the embed methods, the
// HTTP routes and the client all speak them, so they live below all three.

/**
 * How long `start`, `startRun` and `signal` wait (docs/engine.md, "When a call resolves"):
 * `'quick'` (default) until the work that finishes at once is recorded, never for an
 * in-process effect still running after its quick-attempt window; `'settled'` until the run
 * is finished, or parked with nothing in flight.
 */
export type WaitFor = 'quick' | 'settled'

export interface StartOptions {
  runId?: string
  threadId?: string
  idempotencyKey?: string
  wait?: WaitFor
  /**
   * The run's deadline in ms from its start (overrides the definition's `timeoutMs`): past it
   * the run fails with RUN_TIMED_OUT, its waits and attempts cancelled as a cancel does.
   */
  timeoutMs?: number
  /**
   * Among the queued runs of its flow-control key, higher is admitted first (any finite
   * number; default 0). See docs/flow-control.md.
   */
  priority?: number
  /**
   * Not admitted before this time (epoch ms, the engine's clock): a durable delayed start. The
   * run is `queued` until then (docs/flow-control.md).
   */
  startAt?: number
  /**
   * The run's attributes, each declared by its definition (docs/operating-runs.md,
   * "Attributes"): what `listRunSummaries` finds it by.
   */
  attributes?: RunAttributes
}

export interface StartRunArgs extends StartOptions {
  kind: string
  definitionName: string
  definitionVersion?: string
  input?: Json
}

/**
 * One key of a flow-control queue (`queues()`, `GET /queues`; docs/flow-control.md): `queue`
 * is `<kind>:<name>`, `key` the concurrency key ('' for a definition's one queue).
 */
export interface QueueInfo {
  queue: string
  key: string
  /** The key's concurrency limit (null: none, runs wait only for their `startAt`). */
  limit: number | null
  /** Runs admitted and not finished. */
  active: number
  /** Runs waiting for admission. */
  queued: number
  /** How long the oldest waiting run has waited (ms), null when none waits. */
  oldestWaitMs: number | null
  /** The key's rate (null: none). */
  rate: { limit: number; periodMs: number } | null
  /** Rate admissions of the key in the last minute (null without a rate). */
  admittedLastMinute: number | null
  /** The definition's singleton mode (null: not a singleton; `limit` is then 1). */
  singleton: 'skip' | 'queue' | null
}

/** One registered definition (`listDefinitions`, `GET /definitions`). */
export interface DefinitionInfo {
  kind: string
  name: string
  /** The version a start without `definitionVersion` gets: the last one registered. */
  defaultVersion: string
  /** In registration order; `inputSchema` when the input schema's library can give one. */
  versions: Array<{ version: string; inputSchema?: JsonObject }>
}

/** One definition version in the drift report (`engine.versions()`, `GET /definitions/versions`). */
export interface VersionInfo {
  kind: string
  name: string
  version: string
  /** Runs of this version not yet terminal, on the whole store (every host's). */
  activeRuns: number
  /** This host registers the version. */
  registered: boolean
  /** A start without `definitionVersion` gets this version on this host. */
  isDefault: boolean
  /**
   * Whether the oldest active run's recorded shape fingerprint is the registered definition's:
   * `'changed'` means its threads fail with DEFINITION_CHANGED here; `'unrecorded'` when the
   * definition declares no shape or the start event was trimmed. Only with active runs here.
   */
  fingerprint?: 'match' | 'changed' | 'unrecorded'
  /** Registered, not the default, and no run left on it: this host may stop registering it. */
  safeToDelete: boolean
  /**
   * Some live host registers the version (this one, or another advertising it: docs/deploys.md,
   * "Stranded runs"). False with active runs: those runs are stranded.
   */
  live: boolean
}

/** The drift report: versions with runs in the store beside what this host registers. */
export interface VersionReport {
  /** By kind, name and version. */
  versions: VersionInfo[]
  /** Runs not yet terminal on versions this host does not register (another host executes them). */
  unexecutableRuns: number
  /** Runs not yet terminal on versions no live host registers: they wait for one to start. */
  strandedRuns: number
}

export interface ReplayStep {
  seq: number
  event: EventEnvelope
  before: RunState
  after: RunState
}

export interface EffectStatusView {
  effectId: string
  threadId: string
  type: string
  attempt: number
  status: EffectStatus
  deadlineAt: number | null
  lastError: ErrorInfo | null
}

export interface DeadlineView {
  kind: 'timer' | 'retry' | 'effect-deadline' | 'run-deadline'
  at: number
  runId: string
  threadId: string
  waitId?: string
  effectId?: string
}

export interface WaitView {
  waitId: string
  threadId: string
  key: string
  on: WaitOn
}

/** `inspectRun` / `GET /runs/:id/status`. */
export interface RunOperationalStatus {
  runId: string
  status: RunState['status']
  threads: ThreadState[]
  waits: WaitView[]
  effects: EffectStatusView[]
  deadlines: DeadlineView[]
  head: number
  tail: number
}

/** One durable effect attempt, read from the log (`GET /runs/:id/effects`). */
export interface EffectAttemptView {
  effectId: string
  threadId: string
  type: string
  attempt: number
  status: string
  startedAt?: number
  finishedAt?: number
  error?: ErrorInfo
}

/** `engine.result(runId, options)`. */
export interface ResultOptions {
  /**
   * How long to wait for the run to finish, in ms of the engine's clock; past it `result`
   * rejects with RESULT_TIMEOUT (the run goes on). Default: no limit.
   */
  timeoutMs?: number
}
