import { defineProjection } from '../../core/module-api.js'

export interface EvaluationItem {
  threadId: string
  evaluator: string
  route: string
  score?: number
  reason?: string
}

/** Every evaluation of a run, in order: which evaluator routed what, with score and reason. */
export const evaluations = defineProjection<{ items: EvaluationItem[] }>({
  initial: { items: [] },
  reduce(state, event) {
    if (event.type !== 'evaluator.evaluated') return state
    const p = event.payload as Record<string, any>
    const item: EvaluationItem = { threadId: p.threadId, evaluator: p.evaluator, route: p.route }
    if (p.score !== undefined) item.score = p.score
    if (p.reason !== undefined) item.reason = p.reason
    return { items: [...state.items, item] }
  },
})
