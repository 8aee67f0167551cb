// A start that died after its store call and before writing its run's log leaves a queue entry
// with no run (docs/flow-control.md, "Across processes and hosts"). A debounce window's entry
// is started by the sweep (debounce-windows.test.ts); any other is forgotten: by the store's
// `forgetAbandoned` once its hold has passed, and by the sweep of every engine on the store.
import { createEngine, type EventStore, type FlowStore, type RunMeta } from 'skein'
import { makeEnvelopes } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'
import { until } from './flow-hosts.js'

const kinds = storeKinds('abandoned-entries')

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

const entry = (runId: string, enqueuedAt: number) => ({
  runId,
  queue: 'workflow:q',
  key: 'k',
  priority: 0,
  startAt: 0,
  enqueuedAt,
})

/** A start's store call (queued, admitted when `limit` leaves a slot) without its log. */
async function abandon(flow: FlowStore, runId: string, limit: number, at: number) {
  const round = { queue: 'workflow:q', key: 'k', limit, now: at, holdUntil: at + 1000 }
  return (await flow.admit({ ...round, enqueue: entry(runId, at) })).admitted
}

const meta: RunMeta = {
  status: 'queued',
  kind: 'workflow',
  definitionName: 'q',
  definitionVersion: 'v1',
  createdAt: 1000,
  updatedAt: 1000,
  nextDeadlineAt: null,
}

describe.each(kinds)('abandoned queue entries ($name)', (kind) => {
  it('forgetAbandoned forgets entries with no log queued before the cut, and nothing else', async () => {
    const store: EventStore = kind.fresh().open()
    const flow = store.flow as FlowStore
    expect(await abandon(flow, 'admitted-dead', 1, 1000)).toEqual(['admitted-dead'])
    expect(await abandon(flow, 'queued-dead', 1, 1000)).toEqual([])
    expect(await abandon(flow, 'young', 1, 1500)).toEqual([])
    // A run whose log exists is never forgotten here, however old its entry.
    expect(await abandon(flow, 'written', 0, 1000)).toEqual([])
    await store.append('written', makeEnvelopes('written', 1, 1), { expectedSeq: 0, meta })
    expect(await flow.forgetAbandoned(1200)).toBe(2)
    expect(await flow.admission('admitted-dead')).toBeNull()
    const [state] = await flow.keys(0)
    // 'written' waits (queued); 'young' is a start that may still write its log.
    expect(state).toMatchObject({ active: 0, queued: 1 })
    expect(await flow.forgetAbandoned(1600)).toBe(1)
    expect(await flow.forgetAbandoned(1600)).toBe(0)
  })
})

const q = defineWorkflow({
  name: 'q',
  flow: { concurrency: { limit: 1 } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})

describe.each(kinds.filter((k) => k.name !== 'memory'))('the sweep ($name)', (kind) => {
  it('forgets the entries of starts that died before their log, once their hold passed', async () => {
    const store = kind.fresh().open()
    const engine = createEngine({
      store,
      // A start's hold is the lease's time: 1 s here.
      ownership: { leaseMs: 1000 },
      modules: [workflow({ definitions: [q] })],
    })
    closers.unshift(() => engine.stop())
    await engine.ready()
    const flow = store.flow as FlowStore
    const now = Date.now()
    expect(await abandon(flow, 'dead-admitted', 5, now)).toEqual(['dead-admitted'])
    expect(await abandon(flow, 'dead-queued', 0, now)).toEqual([])
    expect((await flow.keys(0)).length).toBe(1)
    await until('the sweep to forget both entries', async () => (await flow.keys(0)).length === 0)
    // The key works as before: a start is admitted.
    expect((await engine.start(q, undefined)).state.status).toBe('running')
  }, 30_000)
})
