import { DefinitionError, defineModule, type Module } from '../../core/module-api.js'
import type { ModelAdapter } from '../agent/index.js'
import { shape } from '../shared/shape.js'
import type { EvaluatorDefinition } from './define-evaluator.js'
import { evaluations } from './evaluations.js'
import { evaluatorKind } from './evaluator-kind.js'

/**
 * The evaluator module: kind `evaluator`, the `evaluator.evaluated` event and the
 * `evaluations` projection. `model` judges rubric evaluators without their own; a rubric with
 * no model at all is refused here, not at run time.
 *
 * @example
 * createEngine({ modules: [workflow({ definitions: [refund] }), evaluator({ definitions: [risk] })] })
 */
export function evaluator(
  options: { definitions?: readonly EvaluatorDefinition[]; model?: ModelAdapter } = {},
): Module {
  const definitions = options.definitions ?? []
  for (const d of definitions) {
    if (d.rubric && !d.model && !options.model) {
      throw new DefinitionError(
        `evaluator ${d.name} is a rubric and needs a model: evaluator({ model }) or defineEvaluator({ model })`,
      )
    }
  }
  return defineModule({
    namespace: 'evaluator',
    version: '1.0.0',
    events: {
      evaluated: shape<{ threadId: string; evaluator: string; route: string }>({
        threadId: 'string',
        evaluator: 'string',
        route: 'string',
      }),
    },
    kinds: { evaluator: evaluatorKind({ model: options.model }) },
    projections: { evaluations },
    definitions,
  })
}
