// A worker's callback, or an operator's requeue of its stuck attempt, reaching a host that does
// not register the run's version (docs/deploys.md, "Any host accepts, a host with the version
// executes"): checked there, recorded, answered, and applied once by a host with the version.
import {
  bearerAuth,
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type EngineOptions,
  httpWorkerQueue,
} from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('deploy-foreign-worker').filter((k) => k.name !== 'memory')
const TOKEN = 'worker-token-foreign-callbacks-0123'

const jobs = defineModule({
  namespace: 'jobs',
  effects: { render: defineEffect({ execution: 'worker', retry: { maxAttempts: 1 } }) },
})

/** render (a worker effect) → done, which names the version that finished it. */
const job = (version: string) =>
  defineWorkflow({
    name: 'job',
    version,
    effects: ['jobs.render'],
    nodes: {
      render: { run: (ctx) => ctx.invoke('jobs.render', {}) },
      done: { after: ['render'], run: ({ results }) => ({ version, got: results.render }) },
    },
  })

const open: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close()
})

async function host(store: EngineOptions['store'], versions: string[], owner: string) {
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: versions.map(job) }), jobs],
    ownership: { owner, pollMs: 10 },
    worker: httpWorkerQueue(),
    authorize: bearerAuth({ worker: TOKEN }),
  })
  const server = await engine.serve({ port: 0 })
  open.push(async () => {
    await server.close()
    await engine.stop()
  })
  return { engine, url: server.url }
}

async function post(url: string, path: string, body: unknown) {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() }
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; ; i++) {
    const value = await read()
    if (done(value) || i > 1000) return value
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

const typesOf = async (engine: Engine, runId: string) =>
  (await engine.getEvents(runId)).map((e) => e.type)

describe.each(kinds)('worker callbacks on a host without the run’s version on $name', (kind) => {
  it('a worker claims on the host with the version and completes through the other: applied once', async () => {
    const storage = kind.fresh()
    const capable = await host(storage.open(), ['v1'], 'capable')
    const other = await host(storage.open(), ['v2'], 'other')
    await capable.engine.startRun({ kind: 'workflow', definitionName: 'job', runId: 'j1' })
    const claimed = await until(
      () => post(capable.url, '/workers/tasks/claim', { types: ['jobs.render'] }),
      (r) => r.body.tasks?.length > 0,
    )
    const [task] = claimed.body.tasks as Array<{ runId: string; effectId: string; attempt: number }>
    expect(task).toMatchObject({ runId: 'j1', attempt: 1 })

    // A stale attempt is ignored there as here: nothing written.
    const before = (await typesOf(capable.engine, 'j1')).length
    const stale = await post(other.url, `/runs/j1/effects/${task.effectId}/callback`, {
      attempt: 7,
      kind: 'complete',
      result: 'stale',
    })
    expect(stale.status).toBe(200)
    // A heartbeat for an effect without a heartbeat timeout changes nothing: nothing written.
    const beat = await post(other.url, `/runs/j1/effects/${task.effectId}/callback`, {
      attempt: 1,
      kind: 'heartbeat',
    })
    expect(beat.status).toBe(200)
    expect((await typesOf(capable.engine, 'j1')).length).toBe(before)
    // Not JSON-shaped: refused there, nothing written.
    const bad = await post(other.url, `/runs/j1/effects/${task.effectId}/callback`, {
      attempt: 1,
      kind: 'finished',
    })
    expect(bad.status).toBe(400)
    expect((await typesOf(capable.engine, 'j1')).length).toBe(before)

    // The completion, sent twice (the worker retried): answered at once, recorded, applied once.
    const path = `/runs/j1/effects/${task.effectId}/callback`
    const body = { attempt: 1, kind: 'complete', result: { pages: 3 } }
    const first = await post(other.url, path, body)
    expect(first.status).toBe(200)
    expect(first.body.state).toMatchObject({ executing: false, definitionVersion: 'v1' })
    const batched = await post(other.url, '/workers/tasks/callbacks', {
      callbacks: [{ runId: 'j1', effectId: task.effectId, ...body }],
    })
    expect(batched.status).toBe(200)
    expect(batched.body.results[0].error).toBeUndefined()

    const done = await until(
      () => capable.engine.getRun('j1'),
      (s) => s.status === 'completed',
    )
    expect(done.output).toMatchObject({ done: { version: 'v1', got: { pages: 3 } } })
    const types = await typesOf(capable.engine, 'j1')
    expect(types.filter((t) => t === 'runtime.effect.completed')).toHaveLength(1)
    expect(types.filter((t) => t === 'runtime.input.applied').length).toBeGreaterThanOrEqual(1)
  })

  it('a requeue or fail of a stuck attempt on the other host: checked there, applied by the host with the version', async () => {
    const storage = kind.fresh()
    const capable = await host(storage.open(), ['v1'], 'capable')
    const other = await host(storage.open(), ['v2'], 'other')
    await capable.engine.startRun({ kind: 'workflow', definitionName: 'job', runId: 'j2' })
    const dispatched = await until(
      () => capable.engine.inspectRun('j2'),
      (r) => r.effects[0]?.status === 'dispatched',
    )
    const { effectId } = dispatched.effects[0]

    await expect(other.engine.requeueEffect('j2', 'no-such-effect')).rejects.toMatchObject({
      code: 'EFFECT_NOT_FOUND',
    })
    const requeued = await other.engine.requeueEffect('j2', effectId, {
      identity: { user: 'ops' },
    })
    expect(requeued).toMatchObject({ executing: false })
    const second = await until(
      () => capable.engine.inspectRun('j2'),
      (r) => r.effects[0]?.attempt === 2,
    )
    expect(second.effects[0]).toMatchObject({ status: 'dispatched', attempt: 2 })
    const events = await capable.engine.getEvents('j2')
    const scheduled = events.find((e) => e.type === 'runtime.effect.retry.scheduled')!
    expect(scheduled.payload).toMatchObject({ attempt: 2, reason: 'operator', by: { user: 'ops' } })

    // Fail: the policy (one attempt) decides, the run fails on the host with the version.
    expect(await other.engine.failEffect('j2', effectId)).toMatchObject({ executing: false })
    const failed = await until(
      () => capable.engine.getRun('j2'),
      (s) => s.status === 'failed',
    )
    expect(failed.status).toBe('failed')
  })
})
