import { createEngine, type Engine, type FlowStore, memoryStore, RuntimeEvents } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('flow-concurrency')
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.stop()))
})

/** A run per tenant at most two at once; each waits for `app.go` (parked, it keeps its slot). */
const gated = defineWorkflow({
  name: 'gated',
  flow: { concurrency: { limit: 2, key: (input: { tenant: string }) => input.tenant } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})
const modules = [workflow({ definitions: [gated] })]

/** Polls `read` until `done` holds (no timing is asserted: the bound only ends a hung test). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 2000; i++) {
    const value = await read()
    if (done(value)) return value
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error('condition never held')
}

const statuses = async (engine: Engine, ids: string[]) =>
  Promise.all(ids.map(async (id) => (await engine.getRun(id)).status))

describe.each(kinds)('flow control: concurrency ($name)', (kind) => {
  const open = (storage = kind.fresh()) => {
    const engine = createEngine({ store: storage.open(), modules })
    engines.push(engine)
    return engine
  }

  it('admits at most `limit` runs per key; the rest are queued until a run ends', async () => {
    const engine = open()
    const a = []
    for (let i = 0; i < 4; i++) {
      a.push((await engine.start(gated, { tenant: 'a' }, { runId: `a${i}` })).state.status)
    }
    expect(a).toEqual(['running', 'running', 'queued', 'queued'])
    // Another key is not held up by a's queue.
    expect((await engine.start(gated, { tenant: 'b' }, { runId: 'b0' })).state.status).toBe(
      'running',
    )
    await engine.signal('a0', [{ type: 'app.go' }])
    expect((await engine.getRun('a0')).status).toBe('completed')
    // The slot a0 freed goes to a2 (queued first), not a3.
    await until(
      () => statuses(engine, ['a1', 'a2', 'a3']),
      (s) => s[1] === 'running',
    )
    expect(await statuses(engine, ['a1', 'a2', 'a3'])).toEqual(['running', 'running', 'queued'])
    const events = (await engine.getEvents('a2')).map((e) => e.type)
    expect(events.slice(0, 4)).toEqual([
      RuntimeEvents.runStarted,
      RuntimeEvents.runQueued,
      RuntimeEvents.runAdmitted,
      RuntimeEvents.threadStarted,
    ])
    const queued = (await engine.getEvents('a2'))[1]
    expect(queued.payload).toMatchObject({
      queue: 'workflow:gated',
      key: 'a',
      reason: 'concurrency',
      limit: 2,
    })
    const first = (await engine.getEvents('a0')).map((e) => e.type)
    expect(first.slice(0, 3)).toEqual([
      RuntimeEvents.runStarted,
      RuntimeEvents.runAdmitted,
      RuntimeEvents.threadStarted,
    ])
  })

  it('a cancelled queued run is never admitted and frees nothing', async () => {
    const engine = open()
    await engine.start(gated, { tenant: 'a' }, { runId: 'c0' })
    await engine.start(gated, { tenant: 'a' }, { runId: 'c1' })
    await engine.start(gated, { tenant: 'a' }, { runId: 'c2' })
    await engine.start(gated, { tenant: 'a' }, { runId: 'c3' })
    expect((await engine.cancel('c2')).status).toBe('cancelled')
    await engine.signal('c0', [{ type: 'app.go' }])
    await until(
      () => engine.getRun('c3'),
      (s) => s.status === 'running',
    )
    expect(await statuses(engine, ['c1', 'c2', 'c3'])).toEqual(['running', 'cancelled', 'running'])
    const types = (await engine.getEvents('c2')).map((e) => e.type)
    expect(types).not.toContain(RuntimeEvents.runAdmitted)
    expect(types).not.toContain(RuntimeEvents.threadStarted)
    expect((await engine.listRunSummaries({ status: 'queued' })).runs).toEqual([])
  })

  it("wait: 'settled' on a queued start waits for its admission", async () => {
    const engine = open()
    await engine.start(gated, { tenant: 'w' }, { runId: 'w0' })
    await engine.start(gated, { tenant: 'w' }, { runId: 'w1' })
    const settled = engine.start(gated, { tenant: 'w' }, { runId: 'w2', wait: 'settled' })
    await until(
      () => engine.getRun('w2').catch(() => null),
      (s) => s?.status === 'queued',
    )
    await engine.signal('w0', [{ type: 'app.go' }])
    const { state } = await settled
    expect(state.status).toBe('running')
    expect(Object.values(state.threads).map((t) => t.status)).toEqual(['waiting'])
  })

  it('refuses a key function that throws or answers a non-string: 400, nothing written', async () => {
    const bad = defineWorkflow({
      name: 'bad',
      flow: {
        concurrency: {
          limit: 1,
          key: (input: { k?: unknown }) => {
            if (input.k === 'throw') throw new Error('no key')
            return input.k as string
          },
        },
      },
      nodes: { n: { run: () => 1 } },
    })
    const engine = createEngine({
      store: kind.fresh().open(),
      modules: [workflow({ definitions: [bad] })],
    })
    engines.push(engine)
    for (const input of [{ k: 'throw' }, { k: 7 }, { k: '' }]) {
      const error = await engine.start(bad, input).catch((e) => e)
      expect(error.code).toBe('INVALID_INPUT')
      expect(error.message).toMatch(/flow key function/)
    }
    expect(await engine.listRuns()).toEqual([])
    const response = await engine.fetch(
      new Request('http://x/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'workflow', definitionName: 'bad', input: { k: 'throw' } }),
      }),
    )
    expect(response?.status).toBe(400)
    expect(await engine.listRuns()).toEqual([])
    expect((await engine.start(bad, { k: 'fine' })).state.status).toBe('completed')
  })

  if (kind.name !== 'memory') {
    it('holds the limit across two engines on one store', async () => {
      const storage = kind.fresh()
      const one = open(storage)
      const two = open(storage)
      const ids = ['x0', 'x1', 'x2', 'x3', 'x4', 'x5']
      await Promise.all(
        ids.map((id, i) => (i % 2 ? one : two).start(gated, { tenant: 'x' }, { runId: id })),
      )
      const first = await statuses(one, ids)
      expect(first.filter((s) => s === 'running')).toHaveLength(2)
      expect(first.filter((s) => s === 'queued')).toHaveLength(4)
      // Finish runs one by one through either engine: never more than two run at once.
      for (let done = 0; done < ids.length; done++) {
        const now = await statuses(one, ids)
        expect(now.filter((s) => s === 'running').length).toBeLessThanOrEqual(2)
        const running = ids[now.indexOf('running')]
        await (done % 2 ? one : two).signal(running, [{ type: 'app.go' }])
        await until(
          () => statuses(two, ids),
          (s) =>
            s.filter((x) => x === 'completed').length === done + 1 &&
            s.filter((x) => x === 'running').length === Math.min(2, ids.length - done - 1),
        )
      }
      expect(await statuses(two, ids)).toEqual(ids.map(() => 'completed'))
    })
  }
})

describe('flow control: definitions', () => {
  it('refuses a bad limit when the engine is composed', async () => {
    for (const limit of [0, -1, 1.5, Number.NaN]) {
      const bad = defineWorkflow({
        name: 'badlimit',
        flow: { concurrency: { limit } },
        nodes: { n: { run: () => 1 } },
      })
      let error: any
      try {
        createEngine({ modules: [workflow({ definitions: [bad] })] })
      } catch (e) {
        error = e
      }
      expect(error.code).toBe('MODULE_COMPOSITION')
      expect(error.message).toMatch(/flow.concurrency.limit must be a positive integer/)
    }
  })
})

describe('flow control: the admission sweep', () => {
  it('starts a run another process admitted and never started', async () => {
    const clock = manualClock(1_000_000)
    const store = memoryStore()
    const engine = createEngine({ store, clock, modules })
    engines.push(engine)
    await engine.start(gated, { tenant: 's' }, { runId: 's0' })
    await engine.start(gated, { tenant: 's' }, { runId: 's1' })
    await engine.start(gated, { tenant: 's' }, { runId: 's2' })
    expect((await engine.getRun('s2')).status).toBe('queued')
    // "Another process" admits s2 (a slot of a bigger limit) and dies before waking it.
    const now = clock.now()
    const flow = store.flow as FlowStore
    const request = { queue: 'workflow:gated', key: 's', limit: 3, now, holdUntil: now + 1 }
    expect((await flow.admit(request)).admitted).toEqual(['s2'])
    expect((await engine.getRun('s2')).status).toBe('queued')
    for (let i = 0; i < 7; i++) await clock.advance(1000)
    const state = await until(
      () => engine.getRun('s2'),
      (s) => s.status === 'running',
    )
    expect(Object.keys(state.threads)).toHaveLength(1)
  })
})

describe('flow control: run deadlines', () => {
  it('a run still queued at its deadline fails with RUN_TIMED_OUT and never starts', async () => {
    const clock = manualClock(1_000_000)
    const timed = defineWorkflow({
      name: 'timed',
      timeoutMs: 5000,
      flow: { concurrency: { limit: 1 } },
      nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
    })
    const engine = createEngine({ clock, modules: [workflow({ definitions: [timed] })] })
    engines.push(engine)
    await engine.start(timed, undefined, { runId: 't0' })
    expect((await engine.start(timed, undefined, { runId: 't1' })).state.status).toBe('queued')
    await clock.advance(6000)
    const state = await until(
      () => engine.getRun('t1'),
      (s) => s.status !== 'queued',
    )
    expect(state.status).toBe('failed')
    expect(state.error?.code).toBe('RUN_TIMED_OUT')
    const types = (await engine.getEvents('t1')).map((e) => e.type)
    expect(types).not.toContain(RuntimeEvents.threadStarted)
  })
})

describe('flow control: admission rounds of one process', () => {
  it("a run's end joins the round of the starts gathered meanwhile instead of making its own", async () => {
    const store = memoryStore()
    const flow = store.flow as FlowStore
    const admit = flow.admit.bind(flow)
    const calls: Array<Parameters<FlowStore['admit']>[0]> = []
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let holding = false
    flow.admit = async (request) => {
      calls.push(request)
      if (holding) await held
      return admit(request)
    }
    const engine = createEngine({ store, modules })
    engines.push(engine)
    await engine.start(gated, { tenant: 'g' }, { runId: 'g0' })
    await engine.start(gated, { tenant: 'g' }, { runId: 'g1' })
    calls.length = 0
    holding = true
    // g2's round is in the store (held); g0's end and g3's start wait for it.
    const g2 = engine.start(gated, { tenant: 'g' }, { runId: 'g2' })
    await until(
      async () => calls.length,
      (n) => n === 1,
    )
    await engine.signal('g0', [{ type: 'app.go' }])
    await until(
      () => engine.getRun('g0'),
      (s) => s.status === 'completed',
    )
    const g3 = engine.start(gated, { tenant: 'g' }, { runId: 'g3' })
    await new Promise((resolve) => setTimeout(resolve, 20))
    holding = false
    release()
    expect((await g2).state.status).toBe('running')
    expect((await g3).state.status).toBe('queued')
    // g2's round, then one round for g3's start and g0's end together (then the round g3's
    // start asks for as it ends queued).
    const rounds = calls.map((c) => c.enqueue?.runId ?? c.enqueueAll?.map((e) => e.runId))
    expect(rounds.slice(0, 2)).toEqual(['g2', ['g3']])
  })
})
