import { createEngine, type Engine, type FlowStore, RuntimeEvents } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('flow-start-options')
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.stop()))
})

const gated = defineWorkflow({
  name: 'one-at-a-time',
  flow: { concurrency: { limit: 1 } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})
const plain = defineWorkflow({ name: 'plain', nodes: { n: { run: () => 'done' } } })
const modules = [workflow({ definitions: [gated, plain] })]

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 4000; i++) {
    const value = await read()
    if (done(value)) return value
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error('condition never held')
}

describe.each(kinds)('flow control: priority and startAt ($name)', (kind) => {
  const open = (storage = kind.fresh()) => {
    const engine = createEngine({ store: storage.open(), modules })
    engines.push(engine)
    return engine
  }

  it('admits higher priority first within a key, then in queueing order', async () => {
    const engine = open()
    await engine.start(gated, undefined, { runId: 'busy' })
    await engine.start(gated, undefined, { runId: 'low', priority: -1 })
    await engine.start(gated, undefined, { runId: 'first' })
    await engine.start(gated, undefined, { runId: 'high', priority: 5.5 })
    const order: string[] = []
    let running = 'busy'
    for (let i = 0; i < 3; i++) {
      await engine.signal(running, [{ type: 'app.go' }])
      const ids = ['low', 'first', 'high'].filter((id) => !order.includes(id))
      const next = await until(
        async () => {
          for (const id of ids) if ((await engine.getRun(id)).status === 'running') return id
          return undefined
        },
        (id) => id !== undefined,
      )
      order.push(next as string)
      running = next as string
    }
    expect(order).toEqual(['high', 'first', 'low'])
  })

  it('startAt delays a start, durably: queued until then, never early', async () => {
    const engine = open()
    await engine.ready()
    const startAt = Date.now() + 1000
    const { state } = await engine.start(plain, undefined, { runId: 'later', startAt })
    expect(state.status).toBe('queued')
    const queued = (await engine.getEvents('later'))[1]
    expect(queued?.type).toBe(RuntimeEvents.runQueued)
    expect(queued?.payload).toMatchObject({ reason: 'startAt', startAt })
    const done = await until(
      () => engine.getRun('later'),
      (s) => s.status === 'completed',
    )
    expect(done.output).toEqual({ n: 'done' })
    const admitted = (await engine.getEvents('later')).find(
      (e) => e.type === RuntimeEvents.runAdmitted,
    )
    expect(admitted?.ts).toBeGreaterThanOrEqual(startAt)
    // A startAt already past starts at once.
    const now = await engine.start(plain, undefined, { startAt: Date.now() - 1000 })
    expect(now.state.status).toBe('completed')
  })

  it('refuses a priority or startAt that is not a finite number: 400, nothing written', async () => {
    const engine = open()
    const bad: Array<Record<string, unknown>> = [
      { priority: 'high' },
      { priority: Number.NaN },
      { startAt: 'tomorrow' },
      { startAt: Number.POSITIVE_INFINITY },
    ]
    for (const options of bad) {
      const error = await engine.start(plain, undefined, options as never).catch((e) => e)
      expect(error.code).toBe('INVALID_REQUEST')
    }
    const response = await engine.fetch(
      new Request('http://x/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'workflow', definitionName: 'plain', priority: 'x' }),
      }),
    )
    expect(response?.status).toBe(400)
    expect(await engine.listRuns()).toEqual([])
    const ok = await engine.fetch(
      new Request('http://x/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          kind: 'workflow',
          definitionName: 'plain',
          runId: 'http-later',
          startAt: Date.now() + 60_000,
        }),
      }),
    )
    expect(await ok?.json()).toMatchObject({ runId: 'http-later', state: { status: 'queued' } })
  })

  if (kind.name !== 'memory') {
    it('a delayed start survives a restart and starts once, not early', async () => {
      const storage = kind.fresh()
      const first = open(storage)
      await first.ready()
      const startAt = Date.now() + 1000
      await first.start(plain, undefined, { runId: 'restart', startAt })
      await first.stop()
      const second = open(storage)
      await second.ready()
      const done = await until(
        () => second.getRun('restart'),
        (s) => s.status === 'completed',
      )
      expect(done.status).toBe('completed')
      const events = await second.getEvents('restart')
      const admitted = events.filter((e) => e.type === RuntimeEvents.runAdmitted)
      expect(admitted).toHaveLength(1)
      expect(admitted[0]?.ts).toBeGreaterThanOrEqual(startAt)
      expect(events.filter((e) => e.type === RuntimeEvents.threadStarted)).toHaveLength(1)
    })
  }

  it('the store lists waiting keys round-robin from a cursor', async () => {
    const engine = open()
    const later = Date.now() + 60_000
    for (const name of ['a', 'b', 'c']) {
      await engine.start(plain, undefined, { runId: `rr-${name}`, startAt: later })
    }
    const flow = (await engine.store).flow as FlowStore
    // One queue ('workflow:plain', key '') for all three: one key.
    const all = await flow.pending(later, 0, 10)
    expect(all.keys).toEqual([{ queue: 'workflow:plain', key: '' }])
    expect((await flow.pending(later, 0, 10, { queue: 'workflow:plain', key: '' })).keys).toEqual(
      [],
    )
    expect((await flow.pending(later, 0, 10, { queue: 'workflow:a', key: 'z' })).keys).toEqual(
      all.keys,
    )
  })
})
