import {
  type Definition,
  DefinitionError,
  type FlowControl,
  type InferOutput,
  type RetryPolicy,
  type SignalSchemas,
  type StandardSchema,
} from '../../core/module-api.js'
import type { ModelAdapter } from '../agent/index.js'
import { type Declarations, declarationsOf } from '../shared/declarations.js'

/** What an evaluator decides: one of its declared routes, optionally a score and a reason. */
export interface Evaluation<R extends string = string> {
  route: R
  score?: number
  reason?: string
}

export interface EvaluateContext {
  runId: string
  threadId: string
  /** Stable across attempts. */
  effectId: string
  attempt: number
  signal: AbortSignal
}

/** A model-judged rubric: the model answers `questions` and picks a route. */
export interface Rubric {
  questions: readonly string[]
  instructions?: string
}

/**
 * `I` is the input `evaluate` sees; a run (or `ctx.evaluate`) completes with an Evaluation.
 * `Sg`: the signals its runs accept (docs/workflows.md, "Signals"); `N` its name.
 */
export interface EvaluatorDefinition<
  I = any,
  R extends string = string,
  Sg extends SignalSchemas = SignalSchemas,
  N extends string = string,
> extends Definition<I, Evaluation<R>> {
  readonly kind: 'evaluator'
  readonly name: N
  readonly signals?: Sg
  readonly routes: readonly R[]
  readonly description?: string
  readonly evaluate?: (input: I, ctx: EvaluateContext) => Evaluation<R> | Promise<Evaluation<R>>
  readonly rubric?: Rubric
  readonly model?: ModelAdapter
  readonly retry?: RetryPolicy
  readonly timeoutMs?: number
}

interface Common<S, R extends string, Sg extends SignalSchemas, N extends string>
  extends Declarations<Sg> {
  name: N
  version?: string
  /** This version is the one a start by name without a version gets (docs/engine.md). */
  default?: boolean
  /** Flow control of its runs: concurrency per key (docs/flow-control.md). */
  flow?: FlowControl
  description?: string
  input?: S
  routes: readonly R[]
  retry?: RetryPolicy
  timeoutMs?: number
}

type In<S> = S extends StandardSchema ? InferOutput<S> : any

/**
 * Declares an evaluator: code (`evaluate`) or a model-judged rubric (`questions`) that picks one
 * of `routes`. An answer outside `routes` fails the evaluation with `UNDECLARED_ROUTE`.
 *
 * @example
 * const risk = defineEvaluator({ name: 'refund-risk', routes: ['auto', 'review'],
 *   evaluate: (i: { amount: number }) => ({ route: i.amount > 100 ? 'review' : 'auto', score: i.amount / 1000 }) })
 */
export function defineEvaluator<
  const R extends string,
  S extends StandardSchema | undefined = undefined,
  I = In<S>,
  Sg extends SignalSchemas = {},
  const N extends string = string,
>(
  config: Common<S, R, Sg, N> &
    (
      | {
          // NoInfer: the routes come from `routes`; an answer outside them is a type error.
          evaluate: (
            input: I,
            ctx: EvaluateContext,
          ) => Evaluation<NoInfer<R>> | Promise<Evaluation<NoInfer<R>>>
        }
      | { questions: readonly string[]; instructions?: string; model?: ModelAdapter }
    ),
): EvaluatorDefinition<I, R, Sg, N> {
  const name = config?.name
  if (typeof name !== 'string' || name.length === 0) {
    throw new DefinitionError('defineEvaluator: name is required')
  }
  const where = `evaluator ${name}`
  const routes = config.routes
  if (!Array.isArray(routes) || routes.length === 0) {
    throw new DefinitionError(`${where}: routes must list at least one route`)
  }
  if (routes.some((r) => typeof r !== 'string' || r.length === 0)) {
    throw new DefinitionError(`${where}: routes must be non-empty strings`)
  }
  if (new Set(routes).size !== routes.length) {
    throw new DefinitionError(`${where}: routes must be unique`)
  }
  const evaluate = (config as { evaluate?: unknown }).evaluate
  const rubric = config as {
    questions?: readonly string[]
    instructions?: string
    model?: ModelAdapter
  }
  if ((evaluate === undefined) === (rubric.questions === undefined)) {
    throw new DefinitionError(`${where}: give exactly one of evaluate() or questions`)
  }
  if (evaluate !== undefined && typeof evaluate !== 'function') {
    throw new DefinitionError(`${where}: evaluate must be a function`)
  }
  const declared = declarationsOf(where, config)
  if (rubric.questions !== undefined) {
    const qs = rubric.questions
    if (!Array.isArray(qs) || qs.length === 0 || qs.some((q) => typeof q !== 'string')) {
      throw new DefinitionError(`${where}: questions must be a non-empty list of strings`)
    }
  }
  return Object.freeze({
    kind: 'evaluator' as const,
    name,
    version: config.version ?? 'v1',
    ...(config.default !== undefined ? { default: config.default } : {}),
    ...(config.flow !== undefined ? { flow: config.flow } : {}),
    input: config.input,
    description: config.description,
    routes: Object.freeze([...routes]),
    evaluate: evaluate as EvaluatorDefinition<I, R>['evaluate'],
    rubric: rubric.questions
      ? { questions: [...rubric.questions], instructions: rubric.instructions }
      : undefined,
    model: rubric.model,
    retry: config.retry,
    timeoutMs: config.timeoutMs,
    ...declared,
  })
}
