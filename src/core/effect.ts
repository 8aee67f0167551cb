import type { Json } from './json.js'
import type { RetryPolicy } from './retry.js'
import type { StandardSchema } from './schema.js'

/** What an effect handler receives beside its input. */
export interface EffectContext {
  /** Stable across attempts: hand it to the outside world as an idempotency key. */
  effectId: string
  attempt: number
  runId: string
  threadId: string
  /** Aborted when the thread is cancelled or the attempt times out. */
  signal: AbortSignal
  /** Records a module event atomically with this attempt's result. */
  emit(type: string, payload?: Json): void
  /**
   * Sends a transient event to live subscribers of the run now (SSE, `subscribeTransient`):
   * best effort, in process, never stored. For progress such as streamed text.
   */
  publish(type: string, payload?: Json): void
  /** The registered type of an effect object (for modules that record effect requests). */
  effectType(effect: EffectDefinition): string | undefined
}

/**
 * Where an effect runs: `local` (in this process, after its attempt is durably recorded),
 * `inline` (during the wake iteration, recorded with the iteration's commit: at-least-once
 * on a crash, for cheap deterministic work such as workflow node bodies) or `worker`.
 */
export type EffectExecutionMode = 'local' | 'inline' | 'worker'

/**
 * On an effect that stands in for another (a test's fake, `replaceEffects` in `skein/testing`):
 * the effect object it replaces, which composition then resolves to the stand-in's type.
 */
export const REPLACES: unique symbol = Symbol.for('skein.effect.replaces')

export interface EffectDefinition<I = any, O = any> {
  readonly kindOf: 'effect'
  readonly [REPLACES]?: EffectDefinition
  /** Set by module registration (`namespace.key`) or given for an anonymous effect. */
  readonly type?: string
  readonly input?: StandardSchema<any, I>
  readonly retry?: RetryPolicy
  readonly timeoutMs?: number
  readonly execution?: EffectExecutionMode
  /**
   * Inline effects only (ignored otherwise): a successful attempt records nothing. Its result is
   * the invoking thread's `ctx.outcome(key)` until the wake iteration ends, so the kind must
   * record what it keeps of it in an event it emits (workflow nodes record their body's
   * directive in `workflow.node.started`). A failed attempt, or one that emits events, is
   * recorded as usual and the effect goes on as a recorded one (retries, operator retry). For
   * effects a kind builds for its own invocations, since the kind is what records the result.
   */
  readonly ephemeral?: boolean
  readonly execute?: (input: I, ctx: EffectContext) => O | Promise<O>
  readonly scheduleToStartMs?: number
  readonly startToCloseMs?: number
  readonly heartbeatMs?: number
  /** Worker effects: how long a cancel request waits for the worker's `cancelled` (default 30 s). */
  readonly cancellationTimeoutMs?: number
  /**
   * At most `limit` attempts of this effect in flight at once, per `key` of the attempt's input
   * when it is given, across every run and every process sharing the store
   * (docs/flow-control.md, "Effects"). An attempt that finds no free slot waits, `queued`.
   */
  readonly concurrency?: { limit: number; key?: (input: I) => string }
  /**
   * At most `limit` attempts of this effect started per `periodMs` (any such window), per `key`
   * when it is given, across every process sharing the store; the excess waits, `queued`.
   */
  readonly rate?: { limit: number; periodMs: number; key?: (input: I) => string }
}

export type EffectConfig<I, O> = Omit<EffectDefinition<I, O>, 'kindOf'>

/** Declares an effect: work that acts outside the run, recorded attempt by attempt. */
export function defineEffect<I = unknown, O = unknown>(
  config: EffectConfig<I, O>,
): EffectDefinition<I, O> {
  return Object.freeze({ ...config, kindOf: 'effect' as const })
}
