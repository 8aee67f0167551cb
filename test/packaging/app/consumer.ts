// Uses the main API of every subpath, as an app that installed the packed tarball would.
// Type-checked with strict, noUncheckedIndexedAccess, exactOptionalPropertyTypes and
// skipLibCheck: false (no @types/node), then run with plain node; it prints what it saw.
import {
  createEngine,
  defineEffect,
  defineModule,
  defineProjection,
  payload,
  SkeinError,
} from 'skein'
import { createActorHost } from 'skein/actor'
import { agent, defineAgent, defineTool, scriptedModel } from 'skein/agent'
import { approval, decision, pendingApprovals } from 'skein/approval'
import { createEngineClient } from 'skein/client'
import { defineEvaluator, evaluator } from 'skein/evaluator'
import { sqliteStore } from 'skein/sqlite'
import { faultyStore, makeEnvelopes, manualClock } from 'skein/testing'
import type { MakeEngineStorage, MakeHttpHost, StoreContractOptions } from 'skein/testing/vitest'
import { defineWorkflow, workflow } from 'skein/workflow'

const ledger = defineProjection({
  initial: { charges: 0 },
  reduce: (state, event) =>
    event.type === 'shop.charged' ? { charges: state.charges + 1 } : state,
})
const charge = defineEffect({
  execute: async (input: { cents: number }, ctx) => {
    ctx.emit('shop.charged', { cents: input.cents })
    return { receipt: `r-${input.cents}` }
  },
})
const shop = defineModule({
  namespace: 'shop',
  events: { charged: payload<{ cents: number }>() },
  effects: { charge },
  projections: { ledger },
})

const risk = defineEvaluator({
  name: 'risk',
  input: payload<{ cents: number }>(),
  routes: ['auto', 'review'],
  evaluate: ({ cents }) => ({ route: cents > 1000 ? 'review' : 'auto' }),
})

const order = defineWorkflow({
  name: 'order',
  input: payload<{ sku: string; cents: number }>(),
  nodes: {
    price: { run: () => ({ ok: true }) },
    check: { run: (ctx) => ctx.evaluate(risk, { cents: ctx.input.cents }) },
    approve: { after: ['check'], run: (ctx) => ctx.gate({ title: `Ship ${ctx.input.sku}?` }) },
    charge: {
      after: ['approve', 'price'],
      when: ({ results }) => results.approve.outcome === 'approve' && results.price.ok,
      run: (ctx) => ctx.invoke(charge, { cents: ctx.input.cents }),
    },
  },
  output: ({ results }) => ({
    route: results.check.route,
    receipt: results.charge?.receipt ?? null,
  }),
})

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a sku up',
  input: payload<{ sku: string }>(),
  run: async ({ sku }) => ({ sku, inStock: true }),
})
const clerk = defineAgent({
  name: 'clerk',
  instructions: 'Answer stock questions.',
  tools: [lookup],
})
const model = scriptedModel([
  {
    message: { role: 'assistant', content: '' },
    toolCalls: [{ id: 'c1', name: 'lookup', arguments: { sku: 'A1' } }],
  },
  { message: { role: 'assistant', content: 'A1 is in stock.' } },
])

const clock = manualClock(1_000)
const store = sqliteStore({ path: '.skein/app.db' })
const engine = createEngine({
  store,
  clock,
  modules: [
    shop,
    workflow({ definitions: [order] }),
    approval(),
    evaluator({ definitions: [risk] }),
    agent({ definitions: [clerk], model }),
  ],
})

const { runId } = await engine.start(order, { sku: 'A1', cents: 500 })
const [pending] = (await engine.project(runId, pendingApprovals)).items
if (!pending) throw new Error('expected an approval')
const client = createEngineClient({
  baseUrl: 'http://skein.local',
  fetch: async (request) => (await engine.fetch(request)) ?? new Response(null, { status: 404 }),
})
const { state } = await client.signal(runId, [decision(pending.approvalId, 'approve')])
const charges = (await engine.project(runId, ledger)).charges
const answer = (await engine.start(clerk, 'Is A1 in stock?')).state.output

const faulty = faultyStore(store)
faulty.failNext('append', 'before')
const injected = await faulty
  .append('faulty', makeEnvelopes('faulty', 1, 1), { expectedSeq: 0 })
  .then(
    () => 'no fault',
    (error: unknown) => (SkeinError.is(error) ? error.code : 'injected'),
  )
const contracts = await import('skein/testing/vitest').then(
  () => 'loaded',
  (error: { code?: string }) => error.code ?? 'failed',
)
const options: StoreContractOptions = { largePayloadBytes: 1024 }
// The contract suites' factories, as an app writes them (strict flags): a store, a storage
// reopened on restarts, the embed engine as an HTTP host.
const storages: MakeEngineStorage[] = [
  () => sqliteStore({ path: '.skein/contract.db' }),
  () => ({ open: () => sqliteStore({ path: '.skein/contract.db' }), dispose: () => undefined }),
]
const embedHost: MakeHttpHost = (setup) => createEngine(setup)
const actorHttpHost: MakeHttpHost = (setup) => createActorHost(setup)
void [storages, embedHost, actorHttpHost]
// The actor host (memory cells) lists runs from its registry.
const actor = createActorHost({ modules: [workflow({ definitions: [order] })] })
const actorListing = (await actor.fetch(new Request('http://skein.local/runs')))?.status
await actor.stop()

console.log(
  JSON.stringify({
    status: state.status,
    output: state.output ?? null,
    charges,
    answer: answer ?? null,
    injected,
    contracts,
    options,
    actorListing,
  }),
)
await engine.stop()
await store.close()
