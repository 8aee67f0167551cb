// Runs many short runs one after another on a store that keeps nothing, so that every object a
// run makes is garbage by the next young-generation collection. Started by gc-survival.test.ts
// under `--trace-gc-nvp`, which prints one line per collection.
import { createEngine, defineEffect, defineModule, type EventStore } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'

const RUNS = Number(process.argv[2] ?? 6000)

const fx = defineModule({
  namespace: 'fx',
  effects: { step: defineEffect({ execute: async (input: { i: number }) => input }) },
})
const nodes: Record<string, any> = {}
for (let i = 0; i < 3; i++) {
  nodes[`s${i}`] = {
    after: i === 0 ? [] : [`s${i - 1}`],
    run: (ctx: any) => ctx.invoke('fx.step', { i }),
  }
}
const three = defineWorkflow({ name: 'three', nodes })

const nothing: EventStore = {
  append: () => Promise.resolve(),
  read: async () => [],
  tail: async () => 0,
  bounds: async () => ({ head: 1, tail: 0 }),
  listRuns: async () => [],
}
const engine = createEngine({
  store: nothing,
  modules: [workflow({ definitions: [three] }), fx],
  rescanTimers: false,
})
await engine.ready()
for (let i = 0; i < RUNS; i++) {
  const { state } = await engine.start(three)
  if (state.status !== 'completed') throw new Error(`run ended ${state.status}`)
}
await engine.stop()
process.stdout.write('done\n')
