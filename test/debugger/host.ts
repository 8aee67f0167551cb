// The host the browser tests drive: the demo definitions, plus a workflow whose effect fails
// terminally on its first attempt (an operator retry then succeeds), a fan-out and a saga, on a
// fault-injecting store.
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

export async function startHost(): Promise<Host> {
  const store = faultyStore(memoryStore())
  const modules = mergeModules([
    ...(await demoModules()),
    workflow({ definitions: [doomed, parked, fanned, undone] }),
    ops,
  ])
  const engine = createEngine({
    store,
    modules,
    authorize: bearerAuth({ operations: OPS_TOKEN }),
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
