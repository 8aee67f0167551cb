import { withProps } from '../../core/copy.js'
import type { Definition } from '../../core/definition.js'
import type { EffectDefinition } from '../../core/effect.js'
import type { Json } from '../../core/json.js'
import type { GateDirective, GateSpec } from '../approval/gate.js'

/**
 * What a node's `run` may return instead of a value: one durable step, recorded as JSON and
 * carried out by the workflow kind. Its outcome becomes the node's result.
 */
export type Directive =
  | { $directive: 'sleep'; ms: number }
  | { $directive: 'sleepUntil'; at: number }
  | { $directive: 'invoke'; effect: string; input: Json }
  | { $directive: 'spawn'; kind: string; name: string; version: string; input: Json }
  | { $directive: 'waitFor'; type: string; match?: Json; timeoutMs?: number }
  | GateDirective

export const isDirective = (value: unknown): value is Directive =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  typeof (value as any).$directive === 'string'

export interface NodeContext<I = any, R extends Record<string, any> = Record<string, any>> {
  input: I
  /** Results of finished nodes by id (skipped nodes are absent). */
  results: R
  nodeId: string
  runId: string
  threadId: string
  attempt: number
  /** Aborted when the workflow is cancelled. */
  signal: AbortSignal
  sleep(ms: number): Directive
  sleepUntil(epochMs: number): Directive
  invoke(effect: string | EffectDefinition, input?: unknown): Directive
  spawn(definition: Definition, input?: unknown): Directive
  waitFor(type: string, options?: { match?: Json; timeoutMs?: number }): Directive
  gate(spec: GateSpec): Directive
  evaluate(evaluator: Definition, input?: unknown): Directive
}

export function directiveBuilders(
  effectType: (effect: EffectDefinition) => string | undefined,
): Pick<
  NodeContext,
  'sleep' | 'sleepUntil' | 'invoke' | 'spawn' | 'waitFor' | 'gate' | 'evaluate'
> {
  const spawn = (definition: Definition, input: unknown = null): Directive => {
    if (!definition || typeof definition.kind !== 'string' || typeof definition.name !== 'string') {
      throw new TypeError('ctx.spawn needs a definition object')
    }
    return {
      $directive: 'spawn',
      kind: definition.kind,
      name: definition.name,
      version: definition.version,
      input: (input ?? null) as Json,
    }
  }
  return {
    sleep: (ms) => {
      if (!Number.isFinite(ms) || ms < 0) throw new TypeError('ctx.sleep needs a non-negative ms')
      return { $directive: 'sleep', ms }
    },
    sleepUntil: (at) => {
      if (!Number.isFinite(at)) throw new TypeError('ctx.sleepUntil needs an epoch ms')
      return { $directive: 'sleepUntil', at }
    },
    invoke: (effect, input = null) => {
      const type = typeof effect === 'string' ? effect : effectType(effect)
      if (!type) {
        throw new TypeError('ctx.invoke: the effect object is not registered by any module')
      }
      return { $directive: 'invoke', effect: type, input: input as Json }
    },
    spawn,
    waitFor: (type, options = {}) => ({ $directive: 'waitFor', type, ...options }),
    gate: (spec) => {
      if (typeof spec?.title !== 'string') throw new TypeError('ctx.gate needs { title }')
      return withProps(spec, { $directive: 'gate' as const })
    },
    evaluate: (evaluator, input) => {
      if (evaluator?.kind !== 'evaluator') {
        throw new TypeError('ctx.evaluate needs an evaluator definition (defineEvaluator)')
      }
      return spawn(evaluator, input)
    },
  }
}
