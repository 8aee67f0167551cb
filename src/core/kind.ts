import type { Command, Outcome } from './commands.js'
import type { Definition } from './definition.js'
import type { EventEnvelope } from './envelope.js'
import type { Json } from './json.js'

export interface KindContext<D extends Definition = Definition> {
  runId: string
  threadId: string
  parentThreadId: string | null
  definition: D
  input: Json
}

export interface DecideContext<D extends Definition = Definition> extends KindContext<D> {
  /** The outcome of the keyed command `key` issued by this thread. */
  outcome(key: string): Outcome
}

/**
 * One reason a run cannot move to another version of its definition (docs/deploys.md,
 * "Migrating runs"): where the run's recorded progress and the target disagree.
 */
export interface MigrationDifference {
  /** What differs: `nodes.charge` (a workflow node), `input`, `attributes.customer`, `shape`. */
  path: string
  /** What the run recorded or its current version has there; null: nothing. */
  current: Json
  /** What the target version has there; null: nothing (it is missing). */
  target: Json
  /** Why this makes the move unsafe, for people. */
  reason: string
  /** The thread it concerns (the engine sets it; absent for the run as a whole). */
  threadId?: string
}

/**
 * A kind is pure logic over one thread's events: fold them with `step`, and say in `decide`
 * the complete set of work the thread wants now. No I/O, no clock, no randomness.
 * `step` sees the thread's own events (and, for the root thread, external events sent to the
 * run without a thread). States must be JSON and treated as immutable.
 */
export interface KindDefinition<S = any, D extends Definition = any> {
  readonly kindOf: 'kind'
  initialState(ctx: KindContext<D>): S
  step?(state: S, event: EventEnvelope, ctx: KindContext<D>): S
  decide(state: S, ctx: DecideContext<D>): readonly Command[]
  /**
   * The node of this thread an event belongs to, if the kind has nodes (a workflow's node id).
   * `fork(runId, { atNode })` cuts before the first event of the node it names.
   */
  nodeOf?(event: EventEnvelope): string | undefined
  /**
   * Whether a thread of this kind whose `state` was recorded under `from` can go on under `to`
   * (an operator migrating a run, docs/deploys.md "Migrating runs"): the differences that make
   * it unsafe, none when it is safe. Pure, like `decide`. Without it, a thread moves only when
   * both versions declare the same `shape` (or neither declares one).
   */
  migrationDifferences?(state: S, from: D, to: D): readonly MigrationDifference[]
}

export function defineKind<S, D extends Definition = Definition>(
  config: Omit<KindDefinition<S, D>, 'kindOf'>,
): KindDefinition<S, D> {
  return Object.freeze({ ...config, kindOf: 'kind' as const })
}
