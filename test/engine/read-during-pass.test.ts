// Reads see committed state only: while a pass records an effect's outcome (its append not yet
// done), inspectRun and project must not show the half-applied fold.
import {
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type EventStore,
  memoryStore,
} from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, expect, it } from 'vitest'
import { waitFor } from '../support/children.js'

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

it('inspectRun during the append that records an outcome shows the committed state', async () => {
  const held: Array<(v: string) => void> = []
  const fx = defineModule({
    namespace: 'fx',
    effects: {
      call: defineEffect<null, string>({ execute: () => new Promise((r) => held.push(r)) }),
    },
  })
  const flow = defineWorkflow({
    name: 'flow',
    nodes: {
      call: { run: (ctx) => ctx.invoke('fx.call') },
      wait: { after: ['call'], run: (ctx) => ctx.waitFor('app.go') },
    },
  })
  const inner = memoryStore()
  let hold: (() => void) | undefined
  let holding = false
  const store: EventStore = Object.assign(Object.create(inner), {
    async append(...args: Parameters<EventStore['append']>) {
      if (holding) await new Promise<void>((r) => (hold = r))
      return inner.append(...args)
    },
  })
  const engine = createEngine({ store, modules: [workflow({ definitions: [flow] }), fx] })
  engines.push(engine)
  const { runId } = await engine.start(flow)
  const before = await engine.inspectRun(runId)
  expect(before.effects.map((e) => e.status)).toEqual(['started'])
  holding = true
  held[0]('done')
  await waitFor(
    'the append that records the outcome to reach the store',
    () => hold !== undefined,
    {
      withinMs: 10_000,
    },
  )
  // The outcome is folded in memory but not appended: reads still see the attempt running.
  const during = await engine.inspectRun(runId)
  expect(during.tail).toBe(before.tail)
  expect(during.effects.map((e) => e.status)).toEqual(['started'])
  expect(during.waits).toEqual([])
  holding = false
  hold!()
  await (await engine.runtime).idle()
  const after = await engine.inspectRun(runId)
  expect(after.effects).toEqual([])
  expect(after.waits.map((w) => w.on)).toEqual([{ event: { type: 'app.go' } }])
})
