import type { QueueInfo } from '../core/api-types.js'
import type { Definition } from '../core/definition.js'
import type { EffectDefinition } from '../core/effect.js'
import type { TransientEvent } from '../core/envelope.js'
import type { FlowPlace } from '../core/flow.js'
import type { RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { PayloadCodec } from '../core/payload-codec.js'
import type {
  AppendAdmission,
  Claim,
  Clock,
  EventStore,
  FlowStore,
  Ids,
  SnapshotStore,
  StoreCapabilities,
  WakeScheduler,
  Worker,
  WorkerTask,
} from '../core/ports.js'
import type { Registry } from '../core/registry.js'
import type { Batch } from './batch.js'
import type { Causes } from './causes.js'
import type { Fingerprints } from './fingerprint.js'
import type { Logger } from './logger.js'
import type { Observation, ResolvedOptions, ResolvedTrim } from './options.js'
import type { ClaimedTasks } from './ownership/claimed-task.js'
import type { Ownership } from './ownership/ownership.js'
import type { WaitUrls } from './schedule-api.js'

/** What the engine's parts share: built once by createEngine, never global. */
export interface EngineContext {
  registry: Registry
  ids: Ids
  clock: Clock
  options: ResolvedOptions
  store: EventStore
  /**
   * The store's declaration, checked by createEngine against its members and the options: the
   * engine calls an optional member only when its capability is declared (docs/storage.md).
   */
  capabilities: StoreCapabilities
  snapshots: SnapshotStore
  /**
   * Whether `snapshots` are the store's own (not `snapshotStore`, not the engine's memory): only
   * then can a trimmed log be restored with its snapshot in one transaction.
   */
  snapshotsInStore?: boolean
  /**
   * The payload codec the store is wrapped with (docs/data-lifecycle.md): the store reads and
   * writes decoded payloads; what leaves the process as the store holds it (an archive) is
   * encoded with it again.
   */
  codec?: PayloadCodec
  scheduler: WakeScheduler
  worker: Worker | undefined
  /**
   * With an `httpWorkerQueue()` on a store other processes share: stores tasks unless stored
   * already (its `restore`), for the attempts a killed host recorded `dispatched` but never
   * stored (worker-task-restore.ts). Undefined otherwise: nothing to restore.
   */
  restoreTasks?: (tasks: readonly WorkerTask[]) => Promise<void>
  trim: ResolvedTrim | undefined
  /** False when no observer is configured: hot paths skip building observations. */
  observing: boolean
  observe(observation: Omit<Observation, 'at'>): void
  /** Set when observing: the cause (HTTP request) of the current call (causes.ts). */
  causes?: Causes
  /** Fingerprints of definitions' shapes, recorded at thread start and checked on decide. */
  fingerprints: Fingerprints
  /** The engine's logger (silent unless `createEngine({ logger })`); never throws. */
  log: Logger
  /** Delivers a transient event to the run's live subscribers (never stored). */
  publishTransient(event: Omit<TransientEvent, 'afterSeq'>): void
  /** Asks for a wake of `runId` (coalesced); used by effect completions and timers. */
  requestDrive(runId: string): void
  /** Run ownership through the store's leases (several processes on one store), if enforced. */
  ownership?: Ownership
  /** Wait URL tokens and their config (docs/schedules.md, "Wait URLs"). */
  waitUrls?: WaitUrls
  /** Background work done under a claim in the store, stopped with the engine. */
  tasks: ClaimedTasks
  /** Flow control's admissions, when a definition declares flow control (flow-admission.ts). */
  flow?: FlowAdmissions
  /** Effects' flow control (`concurrency`, `rate`; effect-limits.ts), on a store with claims. */
  effectLimits?: EffectAdmissions
}

/** What an attempt of an effect with flow control needs (its keys come from its input). */
export interface EffectLimitSpec {
  /** `effect:<type>`. */
  queue: string
  concurrency?: { key: string; limit: number }
  rate?: { key: string; limit: number; periodMs: number }
}

/** An attempt's admission: the concurrency slot it holds until it ends (rate tokens are spent). */
export interface EffectPermit {
  spec: EffectLimitSpec
  holder: string
  slot: Claim | null
  /** How long the attempt waited for it (set when it was granted to a waiting attempt). */
  waitedMs?: number
}

/** Why an attempt waits, and (for a spent rate) when a token frees. */
export interface EffectDenial {
  reason: 'concurrency' | 'rate'
  limit: number
  key: string
  retryAt?: number
}

/** What passes ask of effects' flow control (effect-limits.ts implements it). */
export interface EffectAdmissions {
  /** Whether attempts of `definition` need admission. */
  limited(definition: EffectDefinition | undefined): definition is EffectDefinition
  /** What an attempt needs; throws INVALID_INPUT when a key function fails. */
  specOf(definition: EffectDefinition, type: string, input: unknown): EffectLimitSpec
  /** Whether attempts of this spec already wait in this process. */
  hasWaiters(spec: EffectLimitSpec): boolean
  /** One try: a permit, or why not. */
  acquire(spec: EffectLimitSpec, holder: string): Promise<EffectPermit | EffectDenial>
  /** Waits for a permit behind earlier waiters; returns the cancel. */
  wait(spec: EffectLimitSpec, holder: string, granted: (permit: EffectPermit) => void): () => void
  /** The attempt ended (or never started): its slot is let go. */
  release(permit: EffectPermit): void
  /** Effect keys with a slot held, or an attempt waiting in this process (`queues()`). */
  keys(): Promise<QueueInfo[]>
  stop(): void
}

/**
 * Where a start went: queued as a new run at `at` (admitted at once, or waiting for `reason`: 'startAt',
 * 'concurrency', 'rate', 'debounce'), or joined to another run (`joined`: its id).
 */
export type FlowEntered =
  | {
      admitted: boolean
      reason: string
      startAt: number
      at: number
      joined?: undefined
      /** Admitted by the run's first append, which takes the slot (`AppendOptions.admit`). */
      admit?: AppendAdmission
    }
  | { joined: string; admit?: undefined }

/** What the operations and passes ask of flow control (flow-admission.ts implements it). */
export interface FlowAdmissions {
  readonly store: FlowStore
  /** A start's place in its definition's queue, or null without flow control. */
  place(
    definition: Definition,
    input: unknown,
    now: number,
    options: { priority?: number; startAt?: number },
  ): FlowPlace | null
  /** The limit a queue's rounds admit under. */
  limitOf(queue: string): number
  /**
   * Queues a new run and admits what free slots allow, or joins the run a singleton `skip` or
   * a debounce window gives the start. Unless `inAppend` is false, a start that only waits for
   * a concurrency slot and whose store admits in the append is answered at once, admitted by
   * its first append (`admit`; when that finds the key full it enters again with `false`).
   */
  enter(runId: string, place: FlowPlace, input: Json, inAppend?: boolean): Promise<FlowEntered>
  /** A slot of the key may be free: one admission round, soon. */
  kick(queue: string, key: string): void
  /** At boot: starts the sweep if a definition declares flow control or runs are queued. */
  boot(): Promise<void>
  stop(): void
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

/**
 * What happened to a worker attempt outside a queue operation: a `dispatch` that threw, or a
 * `cancel` the worker acknowledged at once. The next pass records it (worker-dispatch.ts).
 */
export interface WorkerNotice {
  effectId: string
  attempt: number
  kind: 'dispatch-failed' | 'cancel-acknowledged'
  message: string
}

/** Per-run memory of the engine while the run is active (never shared between runs). */
export interface RunMemory {
  fold: RunFold | null
  /** Executions in flight, by effectId (and calls to the worker still pending). */
  inflight: Map<string, Execution>
  /** Finished in-process executions waiting to be recorded. */
  settled: Execution[]
  /** Worker notices waiting to be recorded. */
  notices: WorkerNotice[]
  /** The latest executor a kind named for each effect (closures live only in memory). */
  executors: Map<string, EffectDefinition>
  /** Set while a pass waits for the attempts it just launched (they report here directly). */
  waiter: (() => void) | null
  /** Threads a capped decide loop left undecided, for the next iteration. */
  carryDirty: Set<string>
  lastSnapshotSeq: number
  /**
   * The run's next deadline to schedule (attempts in flight not counted), as the pass's latest
   * commit computed it for the fold at `deadlineSeq` (-1: none computed yet).
   */
  deadlineAt: number | null
  deadlineSeq: number
  /**
   * The run waits for a worker's outcome (an attempt dispatched or started), as the latest
   * operation left it: a claim or callback on this host comes back for it (local-runs.ts).
   */
  awaitsWorker: boolean
  /** The engine stopped: a pass ends after its current append and launches nothing more. */
  stopped: boolean
  /** The latest cause an operation on this run carried (causes.ts); observers only. */
  cause: string | undefined
  /** Admissions of effects' flow control granted to waiting attempts, not yet started. */
  permits: Map<string, EffectPermit>
}

export const newRunMemory = (): RunMemory => ({
  fold: null,
  inflight: new Map(),
  settled: [],
  notices: [],
  executors: new Map(),
  waiter: null,
  carryDirty: new Set(),
  lastSnapshotSeq: 0,
  deadlineAt: null,
  deadlineSeq: -1,
  awaitsWorker: false,
  stopped: false,
  cause: undefined,
  permits: new Map(),
})

/**
 * Something finished outside a queue operation (an attempt settled, a worker call answered):
 * a pass waiting for its quick attempts hears it at once, otherwise the run is driven.
 */
export function reportBack(ctx: EngineContext, mem: RunMemory, runId: string): void {
  if (mem.waiter) mem.waiter()
  else ctx.requestDrive(runId)
}

/**
 * What every step of a wake pass works on: the engine, the run's memory, the fold, and the
 * current iteration's batch and time. The pass (wake-pass.ts) is the one object that holds
 * them; the steps in other files take it as their first argument.
 */
export interface Pass {
  readonly ctx: EngineContext
  readonly mem: RunMemory
  readonly fold: RunFold
  /** This iteration's events, appended together by the pass's commit. */
  readonly batch: Batch
  /** This iteration's time (also every event's `ts`). */
  readonly now: number
}
