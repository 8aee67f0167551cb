import { createEngine, type Engine, RuntimeEvents } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('flow-controls')
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.stop()))
})

type In = { k: string; n?: number }
const byK = (input: In) => input.k

/** At most 2 admissions per second per key; each run completes at once. */
const rated = defineWorkflow({
  name: 'rated',
  flow: { rate: { limit: 2, periodMs: 1000, key: byK } },
  nodes: { n: { run: (ctx) => ctx.input } },
})
/** One active run per key; a second start gets the live one. */
const skipping = defineWorkflow({
  name: 'skipping',
  flow: { singleton: { key: byK, mode: 'skip' } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})
/** One active run per key; a second start waits behind it. */
const queueing = defineWorkflow({
  name: 'queueing',
  flow: { singleton: { key: byK, mode: 'queue' } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})
/** Starts of one key 500 ms apart or less become one run, at most 2 s after the first. */
const debounced = defineWorkflow({
  name: 'debounced',
  flow: { debounce: { periodMs: 500, maxWaitMs: 2000, key: byK } },
  nodes: { n: { run: (ctx) => ctx.input } },
})
const modules = [workflow({ definitions: [rated, skipping, queueing, debounced] })]

/** Polls `read` until `done` holds (no timing is asserted: the bound only ends a hung test). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 2000; i++) {
    const value = await read()
    if (done(value)) return value
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error('condition never held')
}

describe.each(kinds)('flow control: rate, singleton, debounce ($name)', (kind) => {
  const open = (clock = manualClock(1_000_000)) => {
    const engine = createEngine({ store: kind.fresh().open(), clock, modules })
    engines.push(engine)
    return { engine, clock }
  }
  const statuses = (engine: Engine, ids: string[]) =>
    Promise.all(ids.map(async (id) => (await engine.getRun(id)).status))

  it('rate: admits `limit` per period per key; the excess waits for the window', async () => {
    const { engine, clock } = open()
    const ids = ['r0', 'r1', 'r2', 'r3', 'r4']
    for (const id of ids) await engine.start(rated, { k: 'a' }, { runId: id })
    expect((await engine.start(rated, { k: 'b' }, { runId: 'b0' })).state.status).not.toBe('queued')
    expect(await statuses(engine, ids)).toEqual([
      'completed',
      'completed',
      'queued',
      'queued',
      'queued',
    ])
    const queued = (await engine.getEvents('r2')).find((e) => e.type === RuntimeEvents.runQueued)
    expect(queued?.payload).toMatchObject({ reason: 'rate', key: 'a' })
    await clock.advance(999)
    expect(await statuses(engine, ids)).toEqual([
      'completed',
      'completed',
      'queued',
      'queued',
      'queued',
    ])
    await clock.advance(1)
    await until(
      () => statuses(engine, ids),
      (s) => s[3] === 'completed',
    )
    expect(await statuses(engine, ids)).toEqual([
      'completed',
      'completed',
      'completed',
      'completed',
      'queued',
    ])
    const [a] = (await engine.queues()).filter((q) => q.key === 'a')
    expect(a).toMatchObject({
      rate: { limit: 2, periodMs: 1000 },
      queued: 1,
      admittedLastMinute: 4,
    })
    await clock.advance(1000)
    await until(
      () => statuses(engine, ['r4']),
      (s) => s[0] === 'completed',
    )
  })

  it('singleton skip: a second start of a live key gets the live run', async () => {
    const { engine } = open()
    const first = await engine.start(skipping, { k: 'a' }, { runId: 's0' })
    const second = await engine.start(skipping, { k: 'a' }, { runId: 's1' })
    expect(second.runId).toBe('s0')
    expect(second.state.status).toBe('running')
    expect(second.threadId).toBe(first.threadId)
    await expect(engine.getRun('s1')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    expect((await engine.start(skipping, { k: 'b' }, { runId: 's2' })).runId).toBe('s2')
    await engine.signal('s0', [{ type: 'app.go' }])
    expect((await engine.start(skipping, { k: 'a' }, { runId: 's3' })).runId).toBe('s3')
  })

  it('singleton queue: a second start waits behind the live run', async () => {
    const { engine } = open()
    await engine.start(queueing, { k: 'a' }, { runId: 'q0' })
    expect((await engine.start(queueing, { k: 'a' }, { runId: 'q1' })).state.status).toBe('queued')
    expect((await engine.start(queueing, { k: 'b' }, { runId: 'q2' })).state.status).toBe('running')
    await engine.signal('q0', [{ type: 'app.go' }])
    await until(
      () => statuses(engine, ['q1']),
      (s) => s[0] === 'running',
    )
  })

  it('debounce: starts within the period become one run with the last input', async () => {
    const { engine, clock } = open()
    const answers = []
    for (let n = 0; n < 5; n++) {
      if (n > 0) await clock.advance(400)
      answers.push(await engine.start(debounced, { k: 'a', n }, { runId: `d${n}` }))
    }
    expect(new Set(answers.map((a) => a.runId))).toEqual(new Set(['d0']))
    expect(answers.every((a) => a.state.status === 'queued')).toBe(true)
    // 300 ms after the last start: still open. maxWaitMs (2 s after d0's start) closes it
    // 400 ms after the last start, before the period would.
    await clock.advance(300)
    expect((await engine.getRun('d0')).status).toBe('queued')
    await clock.advance(100)
    const done = await until(
      () => engine.getRun('d0'),
      (s) => s.status === 'completed',
    )
    expect(done.output).toEqual({ n: { k: 'a', n: 4 } })
    const admitted = (await engine.getEvents('d0')).find(
      (e) => e.type === RuntimeEvents.runAdmitted,
    )
    expect(admitted?.payload).toMatchObject({ input: { k: 'a', n: 4 } })
    // The window closed: the next start opens another.
    expect((await engine.start(debounced, { k: 'a', n: 9 }, { runId: 'd9' })).runId).toBe('d9')
  })

  it('debounce: a quiet period ends the window', async () => {
    const { engine, clock } = open()
    await engine.start(debounced, { k: 'q', n: 1 }, { runId: 'e1' })
    expect((await engine.start(debounced, { k: 'q', n: 2 })).runId).toBe('e1')
    await clock.advance(499)
    expect((await engine.getRun('e1')).status).toBe('queued')
    await clock.advance(1)
    const done = await until(
      () => engine.getRun('e1'),
      (s) => s.status === 'completed',
    )
    expect(done.output).toEqual({ n: { k: 'q', n: 2 } })
  })

  it('refuses a key function that throws or answers a non-string: 400, nothing written', async () => {
    const { engine } = open()
    for (const definition of [rated, skipping, debounced]) {
      for (const input of [{}, { k: 5 }]) {
        await expect(
          engine.start(definition, input as unknown as In, { runId: 'bad' }),
        ).rejects.toMatchObject({
          code: 'INVALID_INPUT',
        })
      }
    }
    await expect(engine.getRun('bad')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    expect(await engine.queues()).toEqual([])
  })
})

describe('flow control: refused definitions', () => {
  const refused = (flow: unknown) => {
    const bad = defineWorkflow({ name: 'bad', flow: flow as never, nodes: { n: { run: () => 1 } } })
    try {
      createEngine({ modules: [workflow({ definitions: [bad] })] })
    } catch (error) {
      return error as { code: string; message: string }
    }
    throw new Error('composed')
  }

  it('refuses bad limits, periods, modes and keys when the engine is composed', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ rate: { limit: 0, periodMs: 1000 } }, /flow.rate.limit must be a positive integer/],
      [{ rate: { limit: 1, periodMs: -1 } }, /flow.rate.periodMs must be a positive/],
      [{ rate: { limit: 1 } }, /flow.rate.periodMs must be a positive/],
      [{ singleton: { key: byK, mode: 'drop' } }, /flow.singleton.mode must be 'skip' or 'queue'/],
      [{ singleton: { mode: 'skip' } }, /flow.singleton.key must be a function/],
      [{ debounce: { periodMs: 0, key: byK } }, /flow.debounce.periodMs must be a positive/],
      [{ debounce: { periodMs: 10, key: byK, maxWaitMs: 0 } }, /flow.debounce.maxWaitMs/],
      [{ debounce: { periodMs: 10 } }, /flow.debounce.key must be a function/],
      [{ singleton: { key: byK, mode: 'skip' }, concurrency: { limit: 2 } }, /not both/],
      [{ concurrency: { limit: 2, key: byK }, rate: { limit: 1, periodMs: 10 } }, /same key/],
      [{ rate: { limit: 1, periodMs: 10, every: 1 } }, /flow.rate has no option every/],
    ]
    for (const [flow, message] of cases) {
      const error = refused(flow)
      expect(error.code).toBe('MODULE_COMPOSITION')
      expect(error.message).toMatch(message)
    }
  })
})
