// The host the browser tests drive: the demo definitions, plus a workflow whose effect fails
// terminally on its first attempt (an operator retry then succeeds), a fan-out and a saga, one
// that spends time in retries, a sleep and a child (the timeline), and orders with attributes,
// on a fault-injecting store.
import {
  bearerAuth,
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  memoryStore,
  type ServerHandle,
  TerminalError,
} from 'skein'
import { debuggerUi } from 'skein/debugger'
import { type FaultyStore, faultyStore } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { demoModules, mergeModules } from '../../examples/demo-definitions.js'

export const OPS_TOKEN = 'ops-secret'

const ops = defineModule({
  namespace: 'ops',
  effects: {
    pack: defineEffect<{ n: number }, number>({
      retry: { maxAttempts: 1 },
      execute: async (input) => {
        if (input.n === 3) throw new TerminalError('item 3 does not fit')
        return input.n
      },
    }),
    charge: defineEffect<{ amount: number }, { charged: number }>({
      retry: { maxAttempts: 1 },
      execute: async (input, ctx) => {
        if (ctx.attempt === 1)
          throw new TerminalError('the card was declined', { reason: 'CARD_DECLINED' })
        return { charged: input.amount }
      },
    }),
  },
})

export const doomed = defineWorkflow({
  name: 'doomed',
  nodes: { charge: { run: (ctx) => ctx.invoke('ops.charge', { amount: 42 }) } },
})

/** Parks on an event nobody sends: the 100,000-event run and the bad-data runs live on it. */
export const parked = defineWorkflow({
  name: 'parked',
  nodes: { wait: { run: (ctx) => ctx.waitFor('never.happens') } },
})

/** A fan-out over five items, the third of which fails (collected): one node counting them. */
export const fanned = defineWorkflow({
  name: 'fanned',
  nodes: {
    pack: {
      run: (ctx) =>
        ctx.map([1, 2, 3, 4, 5], (n) => ctx.invoke(ops.effects!.pack, { n }), {
          onItemFailure: 'collect',
        }),
    },
  },
})

/** A child workflow: one node that answers at once. */
export const helper = defineWorkflow({
  name: 'helper',
  nodes: { answer: { run: ({ input }) => ({ echoed: input }) } },
})

/**
 * Where time goes, for the timeline: an effect that fails twice before it succeeds (retried
 * with backoff), a short durable sleep, then a child workflow.
 */
export const traced = defineWorkflow({
  name: 'traced',
  nodes: {
    fetch: { run: (ctx) => ctx.invoke('demo.flaky', { label: 'traced' }) },
    pause: { after: ['fetch'], run: (ctx) => ctx.sleep(300) },
    delegate: { after: ['pause'], run: (ctx) => ctx.spawn(helper, { from: 'traced' }) },
  },
})

/** Orders with attributes, for the run list's search. */
export const order = defineWorkflow({
  name: 'order',
  attributes: { customer: 'string', amount: 'number' },
  nodes: { place: { run: (ctx) => ctx.waitFor('order.go') } },
})

/** Packs item 1, then fails to pack item 3: the first packing is undone before the run fails. */
export const undone = defineWorkflow({
  name: 'undone',
  nodes: {
    pack: {
      run: (ctx) => ctx.invoke(ops.effects!.pack, { n: 1 }),
      compensate: (ctx) => ctx.invoke(ops.effects!.pack, { n: 2 }),
    },
    ship: { after: ['pack'], run: (ctx) => ctx.invoke(ops.effects!.pack, { n: 3 }) },
  },
})

export interface Host {
  engine: Engine
  server: ServerHandle
  store: FaultyStore
  url: string
  stop(): Promise<void>
}

/** `operations: false`: no authorize hook, so the host's operations routes are disabled. */
export async function startHost(options: { operations?: boolean } = {}): Promise<Host> {
  const store = faultyStore(memoryStore())
  const modules = mergeModules([
    ...(await demoModules()),
    workflow({ definitions: [doomed, parked, fanned, undone, helper, traced, order] }),
    ops,
  ])
  const engine = createEngine({
    store,
    modules,
    ...(options.operations === false ? {} : { authorize: bearerAuth({ operations: OPS_TOKEN }) }),
    debugger: { basePath: '/_skein', ui: debuggerUi() },
  })
  const server = await engine.serve({ port: 0 })
  return {
    engine,
    server,
    store,
    url: `${server.url}/_skein/`,
    stop: () => engine.stop(),
  }
}
