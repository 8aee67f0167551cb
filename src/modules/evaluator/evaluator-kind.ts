import {
  type Command,
  commands,
  defineKind,
  type EffectContext,
  type EffectDefinition,
  type ErrorInfo,
  type Json,
} from '../../core/module-api.js'
import type { ModelAdapter } from '../agent/index.js'
import type { EvaluatorDefinition } from './define-evaluator.js'
import { judge } from './rubric.js'

const KEY = 'evaluate'

/**
 * The evaluator kind: one effect computes the evaluation (code or model), then `decide` checks
 * it against the declared routes — in the kind, not the effect, so the check is pure and a bad
 * route fails the thread at once instead of being retried.
 */
export function evaluatorKind(options: { model?: ModelAdapter }) {
  return defineKind<null, EvaluatorDefinition>({
    initialState: () => null,
    decide(_state, ctx) {
      const def = ctx.definition
      const outcome = ctx.outcome(KEY)
      if (outcome.status === 'completed') {
        const recorded = outcome.value as { evaluation?: unknown; usage?: Json }
        const checked = checkEvaluation(def, recorded.evaluation)
        if ('error' in checked) return [commands.fail(checked.error)]
        const event: Record<string, Json> = {
          threadId: ctx.threadId,
          evaluator: def.name,
          ...checked.evaluation,
        }
        if (def.rubric) {
          event.judged = true
          if (recorded.usage) event.usage = recorded.usage
        }
        return [
          commands.emit('evaluator.evaluated', event, { key: 'evaluated' }),
          commands.complete(checked.evaluation),
        ]
      }
      if (outcome.status !== 'none' && outcome.status !== 'pending') {
        const cause =
          outcome.status === 'failed'
            ? outcome.error
            : { code: outcome.status.toUpperCase(), message: `evaluation ${outcome.status}` }
        return [
          commands.fail({
            code: 'EVALUATION_FAILED',
            message: `evaluator ${def.name} failed: ${cause.message}`,
            details: { error: cause as unknown as Json },
          }),
        ]
      }
      const model = def.model ?? options.model
      const effect: EffectDefinition = {
        kindOf: 'effect',
        type: def.rubric ? 'evaluator.judge' : 'evaluator.evaluate',
        async execute(_input: unknown, ectx: EffectContext) {
          if (def.rubric) {
            if (!model) throw noModel(def)
            return judge(model, def, ctx.input, ectx.signal)
          }
          const { runId, threadId, effectId, attempt, signal } = ectx
          const evaluation = await def.evaluate!(ctx.input, {
            runId,
            threadId,
            effectId,
            attempt,
            signal,
          })
          return { evaluation: evaluation ?? null }
        },
      }
      const invoke: Command = commands.invoke(
        effect,
        { evaluator: def.name },
        {
          key: KEY,
          ...(def.retry ? { retry: def.retry } : {}),
          ...(def.timeoutMs !== undefined ? { timeoutMs: def.timeoutMs } : {}),
        },
      )
      return [invoke]
    },
  })
}

const noModel = (def: EvaluatorDefinition) =>
  new Error(
    `evaluator ${def.name} is a rubric and needs a model: evaluator({ model }) or defineEvaluator({ model })`,
  )

/** The evaluation as recorded, or why it is not acceptable. */
export function checkEvaluation(
  def: EvaluatorDefinition,
  value: unknown,
): { evaluation: Record<string, Json> } | { error: ErrorInfo } {
  const where = `evaluator ${def.name}`
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      error: {
        code: 'INVALID_EVALUATION',
        message: `${where} must return { route, score?, reason? }`,
      },
    }
  }
  const { route, score, reason } = value as Record<string, unknown>
  if (typeof route !== 'string' || !def.routes.includes(route)) {
    return {
      error: {
        code: 'UNDECLARED_ROUTE',
        message: `${where} chose route ${JSON.stringify(route)}, which is not one of its routes: ${def.routes.join(', ')}`,
        details: { route: (route ?? null) as Json, routes: [...def.routes] },
      },
    }
  }
  const evaluation: Record<string, Json> = { route }
  if (score !== undefined && score !== null) {
    if (typeof score !== 'number' || !Number.isFinite(score)) {
      return {
        error: { code: 'INVALID_EVALUATION', message: `${where}: score must be a finite number` },
      }
    }
    evaluation.score = score
  }
  if (reason !== undefined && reason !== null) {
    if (typeof reason !== 'string') {
      return { error: { code: 'INVALID_EVALUATION', message: `${where}: reason must be a string` } }
    }
    evaluation.reason = reason
  }
  return { evaluation }
}
