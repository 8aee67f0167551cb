import { defineEffect, defineModule, type EventStore, memoryStore, type Observation } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'

// Every append is observed once it settles: ok (with its latency and whether it deferred its
// fsync) or error (with the store's message), and the caller still sees the store's error.

const newEngine = enginesStoppedAfterEach()

const fx = defineModule({
  namespace: 'fx',
  effects: { quick: defineEffect<null, string>({ execute: async () => 'ok' }) },
})
const flow = defineWorkflow({
  name: 'flow',
  nodes: { a: { run: (ctx) => ctx.invoke('fx.quick', null) } },
})

/** A memory store whose `failAt`-th append (1-based) rejects before writing anything. */
function failingStore(failAt: number): EventStore {
  const inner = memoryStore()
  let calls = 0
  return Object.assign(Object.create(inner), {
    append(...args: Parameters<EventStore['append']>) {
      calls++
      if (calls === failAt) return Promise.reject(new Error('disk on fire'))
      return inner.append(...args)
    },
  })
}

function observedEngine(store: EventStore) {
  const appends: Observation[] = []
  const engine = newEngine({
    store,
    modules: [workflow({ definitions: [flow] }), fx],
    observer: (o) => {
      if (o.type === 'append') appends.push(o)
    },
  })
  return { engine, appends }
}

it('observes each append that lands with its size, latency and fsync deferral', async () => {
  const { engine, appends } = observedEngine(memoryStore())
  const { runId, state } = await engine.start(flow)
  expect(state.status).toBe('completed')
  expect(appends.map((a) => [a.runId, a.outcome, a.deferSync])).toEqual([
    [runId, 'ok', true],
    [runId, 'ok', false],
  ])
  const events = (await engine.getEvents(runId)).length
  expect(appends.reduce((n, a) => n + (a.events as number), 0)).toBe(events)
  for (const a of appends) expect(a.latencyMs).toBeGreaterThanOrEqual(0)
})

it('observes a failed append with the store error, and the start rejects with it', async () => {
  const { engine, appends } = observedEngine(failingStore(1))
  await expect(engine.start(flow, null, { runId: 'r1' })).rejects.toThrow('disk on fire')
  expect(appends).toHaveLength(1)
  expect(appends[0]).toMatchObject({ runId: 'r1', outcome: 'error', error: 'disk on fire' })
  expect(appends[0].events).toBeGreaterThan(0)
  expect(appends[0].latencyMs).toBeGreaterThanOrEqual(0)
})
