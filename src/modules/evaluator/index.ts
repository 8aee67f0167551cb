// `skein/evaluator`: evaluators that route runs (code or model-judged rubric).

export type {
  EvaluateContext,
  Evaluation,
  EvaluatorDefinition,
  Rubric,
} from './define-evaluator.js'
export { defineEvaluator } from './define-evaluator.js'
export type { EvaluationItem } from './evaluations.js'
export { evaluations } from './evaluations.js'
export { evaluator } from './evaluator-module.js'
