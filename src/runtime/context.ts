import type { EffectDefinition } from '../core/effect.js'
import type { TransientEvent } from '../core/envelope.js'
import type { RunFold } from '../core/fold.js'
import type { Json } from '../core/json.js'
import type { Clock, EventStore, Ids, SnapshotStore, WakeScheduler, Worker } from '../core/ports.js'
import type { Registry } from '../core/registry.js'
import type { Fingerprints } from './fingerprint.js'
import type { Logger } from './logger.js'
import type { Observation, ResolvedOptions, TrimOptions } from './options.js'

/** What the engine's parts share: built once by createEngine, never global. */
export interface EngineContext {
  registry: Registry
  ids: Ids
  clock: Clock
  options: ResolvedOptions
  store: EventStore
  snapshots: SnapshotStore
  scheduler: WakeScheduler
  worker: Worker | undefined
  trim: TrimOptions | undefined
  /** False when no observer is configured: hot paths skip building observations. */
  observing: boolean
  observe(observation: Omit<Observation, 'at'>): void
  /** Fingerprints of definitions' shapes, recorded at thread start and checked on decide. */
  fingerprints: Fingerprints
  /** The engine's logger (silent unless `createEngine({ logger })`); never throws. */
  log: Logger
  /** Delivers a transient event to the run's live subscribers (never stored). */
  publishTransient(event: Omit<TransientEvent, 'afterSeq'>): void
  /** Asks for a wake of `runId` (coalesced); used by effect completions and timers. */
  requestDrive(runId: string): void
}

/** How an in-process execution of one attempt ended. */
export type Settlement =
  | { kind: 'ok'; result: unknown; emitted: Array<{ type: string; payload: Json }> }
  | { kind: 'error'; error: unknown }
  | { kind: 'timeout' }

export interface Execution {
  effectId: string
  attempt: number
  /** Aborts the attempt's signal (created lazily: most handlers never read it). */
  abort(reason: Error): void
  settled?: Settlement
}

/** Per-run memory of the engine while the run is active (never shared between runs). */
export interface RunMemory {
  fold: RunFold | null
  /** Executions in flight, by effectId. */
  inflight: Map<string, Execution>
  /** Finished executions waiting to be recorded. */
  settled: Execution[]
  /** The latest executor a kind named for each effect (closures live only in memory). */
  executors: Map<string, EffectDefinition>
  /** Set while a pass waits for the attempts it just launched (they report here directly). */
  waiter: (() => void) | null
  /** Threads a capped decide loop left undecided, for the next iteration. */
  carryDirty: Set<string>
  lastSnapshotSeq: number
  /** The engine stopped: a pass ends after its current append and launches nothing more. */
  stopped: boolean
}

export const newRunMemory = (): RunMemory => ({
  fold: null,
  inflight: new Map(),
  settled: [],
  executors: new Map(),
  waiter: null,
  carryDirty: new Set(),
  lastSnapshotSeq: 0,
  stopped: false,
})
