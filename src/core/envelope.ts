import type { RunAttributes } from './attributes.js'
import type { ErrorInfo } from './errors.js'
import type { Json } from './json.js'

export type EventOrigin = 'runtime' | 'external' | 'worker' | 'operator'

/** A recorded event. `seq` starts at 1 and has no gaps within a run. */
export interface EventEnvelope {
  id: string
  runId: string
  seq: number
  /** Epoch milliseconds from the engine's clock when the batch was written. */
  ts: number
  type: string
  payload: Json
  threadId: string | null
  causationId?: string
  effectId?: string
  origin: EventOrigin
  idempotencyKey?: string
  /** For an event a kind emitted with a keyed `emit`: that key (keeps the emit once-only). */
  key?: string
}

/** An event appended from outside with `signal` or `POST /runs/:id/events`. */
export interface EventInput {
  type: string
  payload?: Json
  threadId?: string
}

/** `queued`: started, not yet admitted by its definition's flow control (docs/flow-control.md). */
export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled'
export type ThreadStatus = 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled'

export interface ThreadState {
  threadId: string
  parentThreadId: string | null
  kind: string
  definitionName: string
  definitionVersion: string
  status: ThreadStatus
  output?: Json
  error?: ErrorInfo
}

/** The folded state of a run (docs/engine.md, "The model"). */
/** A run's folded state; `O` types `output` (a definition's output, from `start`). */
export interface RunState<O = Json> {
  runId: string
  status: RunStatus
  rootThreadId: string
  kind: string
  definitionName: string
  definitionVersion: string
  threads: Record<string, ThreadState>
  output?: O
  error?: ErrorInfo
  lastSeq: number
  createdAt: number
  updatedAt: number
  /** When the run fails with RUN_TIMED_OUT unless it finished (a start's or definition's `timeoutMs`). */
  deadlineAt?: number
  /** The run's attributes (docs/operating-runs.md, "Attributes"); absent when it has none. */
  attributes?: RunAttributes
  /**
   * False when the host that answered does not register the run's definition version: a host
   * that does executes it (docs/deploys.md). Absent otherwise.
   */
  executing?: false
  /** Why the answering host does not execute the run (with `executing` or `stranded`). */
  reason?: string
  /**
   * No live host registers the run's definition version: the run is not failed, it waits, and
   * resumes when a host that registers it starts (docs/deploys.md, "Stranded runs").
   */
  stranded?: true
}

/**
 * A live, best-effort event that is never stored (for example an agent's text deltas while a
 * model is generating). It reaches in-process subscribers and SSE streams only; `afterSeq` is
 * the last durable seq when it was published.
 */
export interface TransientEvent {
  runId: string
  threadId: string
  effectId: string
  type: string
  payload: Json
  afterSeq: number
}

export interface StartResult<O = Json> {
  runId: string
  threadId: string
  state: RunState<O>
}

export const isTerminal = (status: RunStatus | ThreadStatus): boolean =>
  status === 'completed' || status === 'failed' || status === 'cancelled'
