// The restore proofs' definition: two effect steps, then done.
import { defineEffect, defineModule } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'

const fx = defineModule({
  namespace: 'ar',
  effects: { step: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n * 2 }) },
})
export const restoreJob = defineWorkflow({
  name: 'job',
  nodes: {
    a: { run: (ctx) => ctx.invoke('ar.step', { n: 21 }) },
    b: { after: ['a'], run: (ctx) => ctx.invoke('ar.step', { n: 2 }) },
  },
})
export const restoreModules = () => [fx, workflow({ definitions: [restoreJob] })]
