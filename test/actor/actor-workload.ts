// The actor proofs' definitions: `nap` sleeps `input.ms`, then finishes (a durable timer);
// `tick` parks on a signal (`tick.poke`) until it has seen `input.count` of them.
import { defineWorkflow, workflow } from 'skein/workflow'

export const nap = defineWorkflow({
  name: 'nap',
  nodes: {
    sleep: { run: (ctx) => ctx.sleep(Number((ctx.input as { ms?: number })?.ms ?? 1000)) },
    wake: { after: ['sleep'], run: () => ({ awake: true }) },
  },
})

export const actorModules = () => [workflow({ definitions: [nap] })]
