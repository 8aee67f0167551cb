// An operator acts on a worker attempt stuck dispatched or started (docs/workers.md, "Stuck
// attempts"): requeue it or fail it; the boot log names such attempts that have no deadline.
import { bearerAuth, createEngine, type Engine, httpWorkerQueue, memoryStore } from 'skein'
import { createEngineClient } from 'skein/client'
import { manualClock } from 'skein/testing'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { FLOWS, workerEffects } from './helpers.js'

const open: Engine[] = []
afterEach(async () => {
  for (const engine of open.splice(0)) await engine.stop()
})

function host(options: { store?: ReturnType<typeof memoryStore>; logged?: unknown[] } = {}) {
  const clock = manualClock()
  const logged = options.logged
  const log = (fields: unknown, message?: string) => {
    logged?.push({ fields, message })
  }
  const engine = createEngine({
    modules: [workflow({ definitions: FLOWS }), workerEffects],
    store: options.store ?? memoryStore(),
    clock,
    worker: httpWorkerQueue(),
    authorize: bearerAuth({ worker: 'wtok', operations: 'otok' }),
    logger: { debug() {}, info() {}, warn: log, error: log },
  })
  open.push(engine)
  return { engine, clock, idle: async () => (await engine.runtime).idle() }
}

const client = (baseUrl: string, token: string) =>
  createEngineClient({ baseUrl, headers: { authorization: `Bearer ${token}` } })
const flow = (effect: string) => FLOWS.find((f) => f.name === `flow-${effect}`)!

async function dispatched(h: ReturnType<typeof host>, effect: string, runId: string) {
  await h.engine.start(flow(effect), undefined, { runId })
  await h.idle()
  const [record] = (await h.engine.inspectRun(runId)).effects
  expect(record.status).toBe('dispatched')
  return record.effectId
}

const typesOf = async (engine: Engine, runId: string) =>
  (await engine.getEvents(runId)).map((e) => e.type)

describe('stuck worker attempts', () => {
  it('requeue: the attempt fails, a new one is dispatched at once and its task stored; the old one is stale', async () => {
    const h = host()
    const effectId = await dispatched(h, 'w.once', 'rq-1') // maxAttempts 1: the policy would not retry
    const state = await h.engine.requeueEffect('rq-1', effectId, { identity: { user: 'ops' } })
    expect(state.status).toBe('running')
    await h.idle()
    const events = await h.engine.getEvents('rq-1')
    const failed = events.find((e) => e.type === 'runtime.effect.failed')!
    expect(failed.payload).toMatchObject({
      attempt: 1,
      final: false,
      error: { code: 'OPERATOR_REQUEUED' },
    })
    const scheduled = events.find((e) => e.type === 'runtime.effect.retry.scheduled')!
    expect(scheduled.payload).toMatchObject({ attempt: 2, reason: 'operator', by: { user: 'ops' } })
    expect(scheduled.origin).toBe('operator')
    expect((await h.engine.inspectRun('rq-1')).effects[0]).toMatchObject({
      status: 'dispatched',
      attempt: 2,
    })
    const tasks = await (await h.engine.store).workerTasks!.list('rq-1')
    expect(tasks.map((t) => t.task.attempt)).toEqual([2])
    // The first attempt's worker answering late changes nothing.
    const before = (await typesOf(h.engine, 'rq-1')).length
    await h.engine.workerCallback('rq-1', {
      effectId,
      attempt: 1,
      kind: 'complete',
      result: 'late',
    })
    expect((await typesOf(h.engine, 'rq-1')).length).toBe(before)
  })

  it('fail: the retry policy decides; with no attempts left the run fails', async () => {
    const h = host()
    const again = await dispatched(h, 'w.plain', 'fl-1') // maxAttempts 3, backoff 100 ms
    await h.engine.workerCallback('fl-1', { effectId: again, attempt: 1, kind: 'started' })
    await h.engine.failEffect('fl-1', again)
    const events = await h.engine.getEvents('fl-1')
    expect(events.find((e) => e.type === 'runtime.effect.failed')?.payload).toMatchObject({
      error: { code: 'OPERATOR_FAILED' },
      final: false,
    })
    await h.clock.advance(100)
    await h.idle()
    expect((await h.engine.inspectRun('fl-1')).effects[0]).toMatchObject({ attempt: 2 })

    const last = await dispatched(h, 'w.once', 'fl-2')
    const state = await h.engine.failEffect('fl-2', last)
    expect(state.status).toBe('failed')
    expect(await (await h.engine.store).workerTasks!.list('fl-2')).toEqual([])
  })

  it('refuses anything not in a worker’s hands, writing nothing; over HTTP with an operations token', async () => {
    const h = host()
    const effectId = await dispatched(h, 'w.plain', 'rf-1')
    const server = await h.engine.serve({ port: 0 })
    try {
      const worker = client(server.url, 'wtok')
      expect((await worker.requeueEffect('rf-1', effectId).catch((e) => e)).status).toBe(401)
      const ops = client(server.url, 'otok')
      const done = await ops.requeueEffect('rf-1', effectId)
      expect(done.state.status).toBe('running')
      await h.engine.workerCallback('rf-1', { effectId, attempt: 2, kind: 'complete', result: 1 })
      await h.idle()
      const tail = (await typesOf(h.engine, 'rf-1')).length
      const refused = await ops.failEffect('rf-1', effectId).catch((e) => e)
      expect(refused.status).toBe(409)
      expect(refused.code).toBe('EFFECT_NOT_RETRYABLE')
      expect((await ops.failEffect('rf-1', 'nope').catch((e) => e)).code).toBe('EFFECT_NOT_FOUND')
      expect((await typesOf(h.engine, 'rf-1')).length).toBe(tail)
    } finally {
      await server.close()
    }
  })

  it('the boot log names worker attempts in a worker’s hands with no deadline', async () => {
    const store = memoryStore()
    const first = host({ store })
    await dispatched(first, 'w.plain', 'boot-1')
    await dispatched(first, 'w.timed', 'boot-2') // scheduleToStartMs: bounded, not named
    await first.engine.stop()
    const logged: Array<{ fields: any; message?: string }> = []
    const second = host({ store, logged })
    await second.engine.ready()
    for (let i = 0; i < 100 && logged.length === 0; i++) await new Promise((r) => setTimeout(r, 10))
    const warning = logged.find((l) => /no deadline/.test(l.message ?? ''))
    expect(warning?.fields).toMatchObject({ attempts: 1, first: [{ runId: 'boot-1', attempt: 1 }] })
    expect(warning?.message).toMatch(/skein requeue/)
  })
})
