// Modules `skein serve` loads in the CLI tests (the `modules` export form).
import { defineEffect, defineModule, defineProjector } from 'skein'
import { approval } from 'skein/approval'
import { defineWorkflow, workflow } from 'skein/workflow'

export const review = defineWorkflow({
  name: 'review',
  nodes: {
    draft: { run: ({ input }) => ({ text: `About ${(input as { topic: string }).topic}` }) },
    approve: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    done: { after: ['approve'], run: ({ results }) => results.approve.outcome },
  },
})

export const waiter = defineWorkflow({
  name: 'waiter',
  nodes: { wait: { run: (ctx) => ctx.waitFor('order.shipped') } },
  output: ({ results }) => results.wait,
})

/** Invokes an effect nobody can run here (no handler, no worker): it becomes ambiguous. */
export const manual = defineWorkflow({
  name: 'manual',
  nodes: { call: { run: (ctx) => ctx.invoke('ops.manual', { note: 'by hand' }) } },
})

const ops = defineModule({
  namespace: 'ops',
  effects: { manual: defineEffect({ execution: 'worker' }) },
})

export const modules = [workflow({ definitions: [review, waiter, manual] }), approval(), ops]

/** A projector that counts what it is handed (`skein projectors` reports it). */
export const projectors = [defineProjector({ name: 'counter', handle() {} })]
