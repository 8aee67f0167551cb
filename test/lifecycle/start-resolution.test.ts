// When start, startRun and signal resolve (docs/engine.md, "When a call resolves"): after the
// work that finishes at once, never waiting on a long in-process effect unless the caller asks
// with `{ wait: 'settled' }`.
import { createEngine, defineEffect, defineModule, type Engine } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'

/** An effect whose attempts finish only when the test says so. */
function heldEffects() {
  const held: Array<(value: unknown) => void> = []
  const module = defineModule({
    namespace: 'held',
    effects: {
      call: defineEffect<unknown, unknown>({
        execute: () => new Promise((resolve) => held.push(resolve)),
      }),
      quick: defineEffect<unknown, unknown>({ execute: async (input) => ({ echoed: input }) }),
      now: defineEffect<unknown, unknown>({ execute: () => 'sync' }),
    },
  })
  return { module, held }
}

const slow = defineWorkflow({
  name: 'slow',
  nodes: {
    call: { run: (ctx) => ctx.invoke('held.call', { n: 1 }) },
    after: { after: ['call'], run: ({ results }) => ({ got: results.call }) },
  },
})

const quick = defineWorkflow({
  name: 'quick',
  nodes: {
    a: { run: (ctx) => ctx.invoke('held.quick', 1) },
    b: { after: ['a'], run: (ctx) => ctx.invoke('held.now', 2) },
    c: { after: ['b'], run: ({ results }) => [results.a, results.b] },
  },
})

const waiting = defineWorkflow({
  name: 'waiting',
  nodes: {
    poke: { run: (ctx) => ctx.waitFor('app.poke') },
    call: { after: ['poke'], run: (ctx) => ctx.invoke('held.call', { n: 2 }) },
  },
})

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

function setup() {
  const { module, held } = heldEffects()
  const engine = createEngine({
    modules: [workflow({ definitions: [slow, quick, waiting] }), module],
    clock: manualClock(),
  })
  engines.push(engine)
  return { engine, held }
}

const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

/** 'pending' unless `promise` settled within a few event-loop turns. */
async function settledYet<T>(promise: Promise<T>): Promise<'pending' | 'settled'> {
  let done = false
  promise.then(
    () => (done = true),
    () => (done = true),
  )
  await turns()
  return done ? 'settled' : 'pending'
}

describe('when a start resolves (embed)', () => {
  it('does not wait for a long in-process effect: the run is running, its attempt started', async () => {
    const { engine, held } = setup()
    const { runId, state } = await engine.start(slow)
    expect(state.status).toBe('running')
    expect(held).toHaveLength(1)
    const types = (await engine.getEvents(runId)).map((e) => e.type)
    expect(types.at(-1)).toBe('runtime.effect.attempt.started')
    held[0]({ ok: true })
    await (await engine.runtime).idle()
    const done = await engine.getRun(runId)
    expect(done.status).toBe('completed')
    expect(done.output).toEqual({ call: { ok: true }, after: { got: { ok: true } } })
  })

  it("{ wait: 'settled' } holds the start until the run is finished or parked with nothing in flight", async () => {
    const { engine, held } = setup()
    const started = engine.start(slow, undefined, { wait: 'settled' })
    expect(await settledYet(started)).toBe('pending')
    expect(held).toHaveLength(1)
    held[0]('late')
    const { state } = await started
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ call: 'late', after: { got: 'late' } })
  })

  it('startRun takes the same option', async () => {
    const { engine, held } = setup()
    const plain = await engine.startRun({ kind: 'workflow', definitionName: 'slow' })
    expect(plain.state.status).toBe('running')
    const waited = engine.startRun({ kind: 'workflow', definitionName: 'slow', wait: 'settled' })
    expect(await settledYet(waited)).toBe('pending')
    for (const release of held) release(1)
    expect((await waited).state.status).toBe('completed')
  })

  it('effects that finish at once (synchronously or from a resolved promise) complete inside the start', async () => {
    const { engine } = setup()
    const { state } = await engine.start(quick)
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ a: { echoed: 1 }, b: 'sync', c: [{ echoed: 1 }, 'sync'] })
  })

  it("signal resolves once the signal is recorded; { wait: 'settled' } waits for the effect it started", async () => {
    const { engine, held } = setup()
    const { runId } = await engine.start(waiting)
    const first = await engine.signal(runId, [{ type: 'app.poke' }])
    expect(first.status).toBe('running')
    expect(held).toHaveLength(1)
    held[0]('one')
    await (await engine.runtime).idle()
    expect((await engine.getRun(runId)).status).toBe('completed')

    const second = await engine.start(waiting)
    const signalled = engine.signal(second.runId, [{ type: 'app.poke' }], { wait: 'settled' })
    expect(await settledYet(signalled)).toBe('pending')
    held[1]('two')
    const state = await signalled
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ poke: null, call: 'two' })
  })

  it('an unknown wait value is refused before anything is written', async () => {
    const { engine } = setup()
    await expect(
      engine.start(quick, undefined, { runId: 'bad-wait', wait: 'forever' as never }),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringMatching(/wait/) })
    await expect(engine.getRun('bad-wait')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    const { runId } = await engine.start(waiting)
    await expect(
      engine.signal(runId, [{ type: 'app.poke' }], { wait: 'idle' as never }),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
    expect((await engine.getEvents(runId)).some((e) => e.type === 'app.poke')).toBe(false)
  })
})
