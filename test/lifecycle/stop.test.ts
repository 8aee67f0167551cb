// engine.stop() settles every pending call, refuses later ones, and with `graceMs` lets
// in-flight work finish first (docs/engine.md, "Stopping").
import {
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type EventStore,
  memoryStore,
} from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'

function heldModule() {
  const held: Array<{ resolve: (v: unknown) => void; aborted: () => boolean }> = []
  const module = defineModule({
    namespace: 'held',
    effects: {
      call: defineEffect<unknown, unknown>({
        retry: { maxAttempts: 3 },
        execute: (_input, ctx) =>
          new Promise((resolve) => {
            const signal = ctx.signal
            held.push({ resolve, aborted: () => signal.aborted })
          }),
      }),
    },
  })
  return { module, held }
}

const slow = defineWorkflow({
  name: 'slow',
  nodes: {
    call: { run: (ctx) => ctx.invoke('held.call') },
    done: { after: ['call'], run: ({ results }) => ({ got: results.call }) },
  },
})
const parked = defineWorkflow({
  name: 'parked',
  nodes: { poke: { run: (ctx) => ctx.waitFor('app.poke') } },
})

/** A memory store whose appends wait while `hold` is set. */
function holdingStore() {
  const inner = memoryStore()
  const waiting: Array<() => void> = []
  const store: EventStore & { hold: boolean; release(): void; waiting(): number } = Object.assign(
    Object.create(inner),
    {
      hold: false,
      async append(...args: Parameters<EventStore['append']>) {
        if (store.hold) await new Promise<void>((resolve) => waiting.push(resolve))
        return inner.append(...args)
      },
      release() {
        store.hold = false
        for (const go of waiting.splice(0)) go()
      },
      waiting: () => waiting.length,
    },
  )
  return store
}

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

function setup(store: EventStore = memoryStore()) {
  const { module, held } = heldModule()
  const clock = manualClock()
  const engine = createEngine({
    modules: [workflow({ definitions: [slow, parked] }), module],
    store,
    clock,
  })
  engines.push(engine)
  return { engine, held, clock, store }
}

const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

type Ending = { resolved: unknown } | { rejected: any } | 'pending'

/** Watches `promise` from now on: `state` says how it ended so far. */
function watch(promise: Promise<unknown>): { state: Ending } {
  const watched: { state: Ending } = { state: 'pending' }
  promise.then(
    (value) => (watched.state = { resolved: value }),
    (error) => (watched.state = { rejected: error }),
  )
  return watched
}

/** How `promise` ended within a few event-loop turns. */
async function outcome(promise: Promise<unknown>): Promise<Ending> {
  const watched = watch(promise)
  await turns()
  return watched.state
}

describe('engine.stop()', () => {
  it('settles a call waiting for an effect in flight (ENGINE_STOPPED), and aborts the effect', async () => {
    const { engine, held } = setup()
    const waiting = engine.start(slow, undefined, { runId: 'w', wait: 'settled' })
    await turns()
    expect(held).toHaveLength(1)
    await engine.stop()
    const ended = await outcome(waiting)
    expect(ended).toMatchObject({ rejected: { code: 'ENGINE_STOPPED' } })
    expect((ended as { rejected: Error }).rejected.message).toMatch(/run w/)
    expect(held[0].aborted()).toBe(true)
  })

  it('refuses every call made after it, reads included', async () => {
    const { engine } = setup()
    const { runId } = await engine.start(parked)
    await engine.stop()
    const refused = { code: 'ENGINE_STOPPED' }
    await expect(engine.start(parked)).rejects.toMatchObject(refused)
    await expect(engine.signal(runId, [{ type: 'app.poke' }])).rejects.toMatchObject(refused)
    await expect(engine.getRun(runId)).rejects.toMatchObject(refused)
    await expect(engine.listRuns()).rejects.toMatchObject(refused)
    const response = await engine.fetch(new Request(`http://x/runs/${runId}`))
    expect(response?.status).toBe(503)
    // Stopping twice is the same stop.
    await engine.stop()
  })

  it('a call queued behind a running one is refused with nothing written; the running one finishes', async () => {
    const store = holdingStore()
    const { engine } = setup(store)
    const { runId } = await engine.start(parked, undefined, { runId: 'q' })
    store.hold = true
    const first = engine.signal(runId, [{ type: 'app.other', payload: { n: 1 } }])
    await turns()
    expect(store.waiting()).toBe(1)
    const queued = watch(engine.signal(runId, [{ type: 'app.other', payload: { n: 2 } }]))
    await turns() // validated and queued behind the first
    const stopping = engine.stop()
    store.release()
    await stopping
    expect(await outcome(first)).toMatchObject({ resolved: { status: 'running' } })
    await turns()
    const refused = queued.state
    expect(refused).toMatchObject({ rejected: { code: 'ENGINE_STOPPED' } })
    expect((refused as { rejected: Error }).rejected.message).toMatch(/before this call/)
    const payloads = (await store.read(runId))
      .filter((e) => e.type === 'app.other')
      .map((e) => e.payload)
    expect(payloads).toEqual([{ n: 1 }])
  })

  it('with graceMs, in-flight work finishes and is recorded before the engine stops', async () => {
    const { engine, held, store } = setup()
    const { runId } = await engine.start(slow)
    expect(held).toHaveLength(1)
    const stopping = engine.stop({ graceMs: 60_000 })
    expect(await outcome(stopping)).toBe('pending')
    // New calls are refused while the engine drains.
    await expect(engine.start(parked)).rejects.toMatchObject({ code: 'ENGINE_STOPPED' })
    held[0].resolve('in time')
    await stopping
    expect(held[0].aborted()).toBe(false)
    const events = await store.read(runId)
    expect(events.at(-1)?.type).toBe('runtime.run.completed')
    expect(events.at(-1)?.payload).toEqual({
      output: { call: 'in time', done: { got: 'in time' } },
    })
  })

  it('when the grace runs out (on the engine clock), what is still in flight is aborted', async () => {
    const { engine, held, clock, store } = setup()
    const waiting = engine.start(slow, undefined, { runId: 'late', wait: 'settled' })
    await turns()
    const stopping = engine.stop({ graceMs: 1000 })
    expect(await outcome(stopping)).toBe('pending')
    await clock.advance(1000)
    await stopping
    expect(held[0].aborted()).toBe(true)
    expect(await outcome(waiting)).toMatchObject({ rejected: { code: 'ENGINE_STOPPED' } })
    // The attempt stays recorded as started: a restart runs it again (interrupted).
    expect((await store.read('late')).at(-1)?.type).toBe('runtime.effect.attempt.started')
  })

  it('refuses a bad graceMs', async () => {
    const { engine } = setup()
    await expect(engine.stop({ graceMs: -1 })).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
    await expect(engine.stop({ graceMs: Number.NaN })).rejects.toThrow(/graceMs/)
  })
})
