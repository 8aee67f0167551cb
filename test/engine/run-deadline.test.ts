import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, defineEffect, defineModule, type Engine, type EngineOptions } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { createEngineClient } from '../../src/client/index.js'
import { serveHandler } from '../../src/http/server.js'

// A run's deadline (docs/workflows.md, "Run deadline"): `timeoutMs` on a definition or a start
// fails the whole run with RUN_TIMED_OUT, ending its waits and attempts as a cancel does.

const dir = mkdtempSync(join(tmpdir(), 'skein-run-deadline-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const engines: Engine[] = []
const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
  for (const engine of engines.splice(0)) await engine.stop()
})

/** An effect that runs until its abort signal fires; `aborted` counts the aborts it saw. */
const slow = { started: 0, aborted: 0 }
const book = defineEffect({
  execute: (_input: null, ctx) =>
    new Promise((_resolve, reject) => {
      slow.started++
      ctx.signal.addEventListener('abort', () => {
        slow.aborted++
        reject(new Error('aborted'))
      })
    }),
})
const shipping = defineModule({ namespace: 'ship', effects: { book } })

const waiting = defineWorkflow({
  name: 'waiting',
  timeoutMs: 60_000,
  nodes: { approve: { run: (ctx) => ctx.waitFor('order.approved') } },
})
const booking = defineWorkflow({
  name: 'booking',
  nodes: { book: { run: (ctx) => ctx.invoke(book, null) } },
})
const quick = defineWorkflow({
  name: 'quick',
  timeoutMs: 1_000,
  nodes: { one: { run: () => 1 } },
})

function open(options: Partial<EngineOptions> = {}) {
  const engine = createEngine({
    modules: [workflow({ definitions: [waiting, booking, quick] }), shipping],
    clock: manualClock(),
    ...options,
  })
  engines.push(engine)
  return engine
}

const typesOf = async (engine: Engine, runId: string) =>
  (await engine.getEvents(runId)).map((e) => e.type)

describe('run deadline', () => {
  it("a definition's timeoutMs fails the run with RUN_TIMED_OUT and closes its wait", async () => {
    const clock = manualClock()
    const engine = open({ clock })
    const { runId, state } = await engine.start(waiting)
    expect(state.deadlineAt).toBe(clock.now() + 60_000)
    expect((await engine.inspectRun(runId)).deadlines.map((d) => d.kind)).toContain('run-deadline')

    await clock.advance(59_999)
    expect((await engine.getRun(runId)).status).toBe('running')
    await clock.advance(1)
    const run = await engine.getRun(runId)
    expect(run.status).toBe('failed')
    expect(run.error).toMatchObject({
      code: 'RUN_TIMED_OUT',
      details: { deadlineAt: state.deadlineAt },
    })
    expect(run.error?.message).toContain('timeoutMs 60000')
    expect(run.threads[run.rootThreadId].status).toBe('failed')
    const status = await engine.inspectRun(runId)
    expect(status.deadlines).toEqual([])
    expect(status.waits ?? []).toEqual([])
    // A signal after the deadline is recorded, and wakes nothing: the run is over.
    expect((await engine.signal(runId, [{ type: 'order.approved' }])).status).toBe('failed')
  })

  it("a start's timeoutMs aborts an attempt in flight, as a cancel does", async () => {
    const clock = manualClock()
    const engine = open({ clock })
    const before = { ...slow }
    const { runId } = await engine.start(booking, undefined, { timeoutMs: 500 })
    expect(slow.started).toBe(before.started + 1)
    await clock.advance(500)
    const run = await engine.getRun(runId)
    expect(run.status).toBe('failed')
    expect(run.error?.code).toBe('RUN_TIMED_OUT')
    expect(slow.aborted).toBe(before.aborted + 1)
    const types = await typesOf(engine, runId)
    expect(types).toContain('runtime.effect.cancelled')
    expect(types.filter((t) => t === 'runtime.run.failed')).toHaveLength(1)
  })

  it('a run that finishes first keeps no deadline', async () => {
    const clock = manualClock()
    const engine = open({ clock })
    const { runId, state } = await engine.start(quick)
    expect(state.status).toBe('completed')
    expect((await engine.inspectRun(runId)).deadlines).toEqual([])
    await clock.advance(5_000)
    expect((await engine.getRun(runId)).status).toBe('completed')
  })

  it('a non-positive or fractional deadline is refused with nothing written', async () => {
    const engine = open()
    for (const timeoutMs of [0, -1, 1.5, Number.NaN, '10' as unknown as number]) {
      await expect(engine.start(booking, undefined, { timeoutMs })).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
      })
    }
    expect(await engine.listRuns()).toEqual([])
    expect(() =>
      defineWorkflow({ name: 'bad', timeoutMs: 0, nodes: { a: { run: () => 1 } } }),
    ).toThrow(/timeoutMs must be a positive integer/)
  })

  it('over HTTP: POST /runs takes timeoutMs, and refuses a bad one with 400', async () => {
    const clock = manualClock()
    const engine = open({ clock })
    const server = await serveHandler((r) => engine.fetch(r), { port: 0 })
    closers.push(() => server.close())
    const client = createEngineClient({ baseUrl: server.url })
    await expect(client.start(waiting, undefined, { timeoutMs: -5 })).rejects.toMatchObject({
      status: 400,
      code: 'INVALID_REQUEST',
    })
    expect(await engine.listRuns()).toEqual([])
    const { runId } = await client.start(waiting, undefined, { timeoutMs: 10 })
    await clock.advance(10)
    const { state } = await client.getRun(runId)
    expect(state.status).toBe('failed')
    expect(state.error?.code).toBe('RUN_TIMED_OUT')
  })

  it('survives a restart: the next process fires the deadline from the stored log', async () => {
    const path = join(dir, `${++files}.db`)
    const clock = manualClock()
    const first = open({ clock, store: sqliteStore({ path }) })
    const { runId, state } = await first.start(waiting)
    await first.stop()
    engines.splice(engines.indexOf(first), 1)

    const later = manualClock(state.deadlineAt! + 1)
    const second = open({ clock: later, store: sqliteStore({ path }) })
    const { runtime } = await second.ready()
    // Boot recovery finds the stored deadline and drives the run.
    await later.advance(0)
    await runtime.idle()
    const run = await second.getRun(runId)
    expect(run.status).toBe('failed')
    expect(run.error?.code).toBe('RUN_TIMED_OUT')
  })

  it('fires once when two processes on one store both reach the deadline', async () => {
    const path = join(dir, `${++files}.db`)
    const clock = manualClock()
    const a = open({ clock, store: sqliteStore({ path }) })
    const { runId, state } = await a.start(waiting)
    const b = open({ clock: manualClock(state.deadlineAt!), store: sqliteStore({ path }) })
    await clock.set(state.deadlineAt!)
    await Promise.allSettled([a.wake(runId), b.wake(runId), a.wake(runId), b.wake(runId)])
    const types = await typesOf(b, runId)
    expect(types.filter((t) => t === 'runtime.run.failed')).toHaveLength(1)
    expect(types.filter((t) => t === 'runtime.thread.failed')).toHaveLength(1)
    expect((await b.getRun(runId)).error?.code).toBe('RUN_TIMED_OUT')
  })
})
