// The 3-step workflow most benchmarks run: three nodes in a line, each one in-process effect
// returning its input.
import { defineEffect, defineModule } from 'skein'
import { defineWorkflow } from 'skein/workflow'

export const benchEffects = defineModule({
  namespace: 'bench',
  effects: { step: defineEffect<{ i: number }, { i: number }>({ execute: async (x) => x }) },
})

export const three = defineWorkflow({
  name: 'three',
  nodes: {
    s0: { run: (ctx) => ctx.invoke('bench.step', { i: 0 }) },
    s1: { after: ['s0'], run: (ctx) => ctx.invoke('bench.step', { i: 1 }) },
    s2: { after: ['s1'], run: (ctx) => ctx.invoke('bench.step', { i: 2 }) },
  },
})
