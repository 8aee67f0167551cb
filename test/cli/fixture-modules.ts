// Modules `skein serve` loads in the CLI tests (the `modules` export form).
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

export const modules = [workflow({ definitions: [review, waiter] }), approval()]
