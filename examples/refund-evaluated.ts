// A refund workflow branched by an evaluator: small refunds from known customers are paid at
// once, risky ones go to a human, abusive ones are refused. The evaluator is plain code here;
// `defineEvaluator({ questions, routes })` with a model is the drop-in model-judged version.
import { defineEffect, defineModule, type Module, type StandardSchema } from 'skein'
import { approval } from 'skein/approval'
import { defineEvaluator, evaluator } from 'skein/evaluator'
import { defineWorkflow, workflow } from 'skein/workflow'

export interface RefundRequest {
  orderId: string
  amount: number
  /** Refunds this customer had in the last 90 days. */
  recentRefunds?: number
}

const refundRequest: StandardSchema<RefundRequest> = {
  '~standard': {
    version: 1 as const,
    vendor: 'example',
    validate: (value: unknown) => {
      const v = value as Partial<RefundRequest> | null
      return typeof v?.orderId === 'string' && typeof v.amount === 'number' && v.amount > 0
        ? { value: v as RefundRequest }
        : { issues: [{ message: 'needs { orderId: string, amount: positive number }' }] }
    },
  },
}

export const refundRisk = defineEvaluator({
  name: 'refund-risk',
  description: 'Routes a refund request: auto, review or reject',
  input: refundRequest,
  routes: ['auto', 'review', 'reject'],
  evaluate: ({ amount, recentRefunds = 0 }) => {
    if (recentRefunds >= 5)
      return { route: 'reject', score: 1, reason: `${recentRefunds} refunds in 90 days` }
    const score = Math.min(1, amount / 500 + recentRefunds * 0.1)
    if (score < 0.3) return { route: 'auto', score, reason: 'small amount, good history' }
    return { route: 'review', score, reason: 'large amount or frequent refunds' }
  },
})

export const refundEffects = defineModule({
  namespace: 'refunds',
  effects: {
    pay: defineEffect<{ orderId: string; amount: number }, { refundId: string }>({
      retry: { maxAttempts: 3, backoffMs: 200 },
      execute: async (input, ctx) => ({ refundId: `rf_${input.orderId}_${ctx.effectId}` }),
    }),
  },
})

const pay = (ctx: { input: RefundRequest; invoke: (e: string, i: unknown) => unknown }) =>
  ctx.invoke('refunds.pay', { orderId: ctx.input.orderId, amount: ctx.input.amount })

export const refundEvaluated = defineWorkflow({
  name: 'refund-evaluated',
  input: refundRequest,
  nodes: {
    assess: { run: (ctx) => ctx.evaluate(refundRisk, ctx.input) },
    autoPay: {
      after: ['assess'],
      when: ({ results }) => results.assess.route === 'auto',
      run: (ctx) => pay(ctx),
    },
    review: {
      after: ['assess'],
      when: ({ results }) => results.assess.route === 'review',
      run: (ctx) =>
        ctx.gate({
          title: `Refund ${ctx.input.amount} for order ${ctx.input.orderId}?`,
          description: ctx.results.assess.reason,
        }),
    },
    reviewedPay: {
      after: ['review'],
      when: ({ results }) => results.review?.outcome === 'approve',
      run: (ctx) => pay(ctx),
    },
  },
  output: ({ results }) => ({
    route: results.assess.route,
    score: results.assess.score,
    refundId: results.autoPay?.refundId ?? results.reviewedPay?.refundId ?? null,
  }),
})

export const modules: Module[] = [
  workflow({ definitions: [refundEvaluated] }),
  evaluator({ definitions: [refundRisk] }),
  approval(),
  refundEffects,
]
