import { defineEffect, defineModule, type EventStore, memoryStore, type Observation } from 'skein'
import { approval, decision, pendingApprovals } from 'skein/approval'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it, vi } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'

// Which appends may skip their fsync (deferSync): only those that start in-process attempts
// and record no outcome, and a wake pass never ends with one unsynced.

const newEngine = enginesStoppedAfterEach()

const release: Array<() => void> = []
const fx = defineModule({
  namespace: 'fx',
  effects: {
    quick: defineEffect<{ i: number }, { i: number }>({ execute: async (x) => x }),
    slow: defineEffect<null, string>({
      execute: () => new Promise((resolve) => release.push(() => resolve('done'))),
    }),
    remote: defineEffect({ execution: 'worker' }),
  },
})
const chain = defineWorkflow({
  name: 'chain',
  nodes: {
    a: { run: (ctx) => ctx.invoke('fx.quick', { i: 0 }) },
    b: { after: ['a'], run: (ctx) => ctx.invoke('fx.quick', { i: 1 }) },
    c: { after: ['b'], run: (ctx) => ctx.invoke('fx.quick', { i: 2 }) },
  },
})
const slowFlow = defineWorkflow({
  name: 'slow-flow',
  nodes: { s: { run: (ctx) => ctx.invoke('fx.slow', null) } },
})
const gateThenStep = defineWorkflow({
  name: 'gate-then-step',
  nodes: {
    gate: { run: (ctx) => ctx.gate({ title: 'go?' }) },
    step: { after: ['gate'], run: (ctx) => ctx.invoke('fx.quick', { i: 9 }) },
  },
})
const remoteFlow = defineWorkflow({
  name: 'remote-flow',
  nodes: { r: { run: (ctx) => ctx.invoke('fx.remote', null) } },
})

/** A memory store that counts `flush` calls, and the appends they cover. */
function syncSpyStore() {
  const inner = memoryStore()
  const store: EventStore & { syncs: number } = Object.assign(Object.create(inner), {
    capabilities: { ...inner.capabilities, flush: true },
    syncs: 0,
    async flush() {
      store.syncs++
    },
  })
  return store
}

function build(store: EventStore = memoryStore()) {
  const appends: Array<{ deferSync: boolean; events: number }> = []
  const observer = (o: Observation) => {
    if (o.type === 'append' && o.outcome === 'ok') {
      appends.push({ deferSync: o.deferSync as boolean, events: o.events as number })
    }
  }
  const engine = newEngine({
    store,
    observer,
    modules: [
      workflow({ definitions: [chain, slowFlow, gateThenStep, remoteFlow] }),
      approval(),
      fx,
    ],
  })
  return { engine, appends }
}

describe('deferred fsync of attempt starts', () => {
  it('a 3-step chain defers only its first append: each later one records an outcome', async () => {
    const { engine, appends } = build()
    const { state } = await engine.start(chain)
    expect(state.status).toBe('completed')
    expect(appends.map((a) => a.deferSync)).toEqual([true, false, false, false])
  })

  it('a signal that resumes into an effect defers its append; the outcome that follows does not', async () => {
    const { engine, appends } = build()
    const { runId } = await engine.start(gateThenStep)
    // Parking on the gate starts no attempt: that append is fsynced.
    expect(appends.map((a) => a.deferSync)).toEqual([false])
    const [item] = (await engine.project(runId, pendingApprovals)).items
    const done = await engine.signal(runId, [decision(item.approvalId, 'approve')])
    expect(done.status).toBe('completed')
    expect(appends.map((a) => a.deferSync)).toEqual([false, true, false])
  })

  it('a commit that dispatches to a worker is never deferred', async () => {
    const { engine, appends } = build()
    await engine.start(remoteFlow)
    expect(appends.length).toBeGreaterThan(0)
    expect(appends.every((a) => !a.deferSync)).toBe(true)
  })

  it('a pass whose attempt is still running when it ends syncs the deferred append', async () => {
    const store = syncSpyStore()
    const { engine, appends } = build(store)
    const started = engine.start(slowFlow, undefined, { wait: 'settled' })
    await vi.waitFor(() => expect(release).toHaveLength(1))
    // The handler has not finished, and the start commit is already made power-safe.
    await vi.waitFor(() => expect(store.syncs).toBe(1))
    expect(appends.map((a) => a.deferSync)).toEqual([true])
    release.shift()?.()
    const { state } = await started
    expect(state.status).toBe('completed')
    expect(appends.map((a) => a.deferSync)).toEqual([true, false])
    expect(store.syncs).toBe(1)
  })

  it('quick attempts need no separate sync: the fsynced outcome commit covers them', async () => {
    const store = syncSpyStore()
    const { engine } = build(store)
    for (let i = 0; i < 5; i++) expect((await engine.start(chain)).state.status).toBe('completed')
    expect(store.syncs).toBe(0)
  })

  it('a pass that fails after a deferred append still syncs it, and reports its own error', async () => {
    const inner = syncSpyStore()
    let appendsSeen = 0
    const failing: EventStore & { syncs: number } = Object.assign(Object.create(inner), {
      async append(...args: Parameters<EventStore['append']>) {
        // The first append (deferred) lands; the second, recording the outcome, fails.
        if (++appendsSeen === 2) throw new Error('disk full')
        return inner.append(...args)
      },
    })
    const { engine } = build(failing)
    await expect(engine.start(chain)).rejects.toThrow('disk full')
    expect(inner.syncs).toBe(1)
  })
})
