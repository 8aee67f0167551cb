import type { EffectDefinition, ErrorInfo, Json } from '../../core/module-api.js'

/** What a node's `compensate` returns: the effect that undoes what the node did. */
export interface Compensation {
  $compensation: 'invoke'
  effect: string | EffectDefinition
  input: Json
}

/** The `ctx` of a node's `compensate`: the node's own result, and how to name the undo. */
export interface CompensationContext<I = any, T = any> {
  input: I
  /** What the node finished with (its effect's result). */
  result: T
  /** Every finished node's result by id. */
  results: Record<string, any>
  nodeId: string
  runId: string
  /** The compensation: an effect (type or object) and its input, run with its own retries. */
  invoke<E extends string | EffectDefinition>(
    effect: E,
    input?: E extends EffectDefinition<infer In, any> ? In : unknown,
  ): Compensation
}

export const isCompensation = (value: unknown): value is Compensation =>
  typeof value === 'object' &&
  value !== null &&
  (value as Compensation).$compensation === 'invoke' &&
  (value as Compensation).effect !== undefined

export const compensationBuilder = (effect: string | EffectDefinition, input?: unknown) => {
  if (typeof effect !== 'string' && typeof (effect as EffectDefinition)?.execute !== 'function') {
    if ((effect as EffectDefinition)?.kindOf !== 'effect') {
      throw new TypeError('compensate: ctx.invoke needs an effect type or an effect object')
    }
  }
  return { $compensation: 'invoke', effect, input: (input ?? null) as Json } as Compensation
}

/** Directives whose node did an effect a compensation can undo. */
export const COMPENSABLE = new Set(['invoke', 'spawn', 'map', 'waitForUrl'])

/** The state the workflow keeps while it compensates (recorded by its own events). */
export interface CompensationState {
  /** Why: the failure that started the compensation. */
  error: ErrorInfo
  /** Nodes compensated so far, by id. */
  done: Record<string, true>
}
