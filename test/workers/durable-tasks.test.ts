// Worker tasks live in the store (docs/workers.md, "Durable tasks"): a task dispatched before a
// restart is claimed after it, and any host on the store hands out any run's tasks.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  bearerAuth,
  createEngine,
  type Engine,
  type EventStore,
  httpWorkerQueue,
  runHttpWorker,
} from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'
import { FLOWS, workerEffects } from './helpers.js'

const TOKEN = 'worker-token-durable-0123456789'
const flow = FLOWS.find((f) => f.name === 'flow-w.plain')!
const dir = mkdtempSync(join(tmpdir(), 'skein-durable-tasks-'))
let files = 0

const open: Engine[] = []
afterEach(async () => {
  for (const engine of open.splice(0)) await engine.stop()
})

function host(path: string | EventStore, pollMs = 50): Engine {
  const engine = createEngine({
    modules: [workflow({ definitions: [flow] }), workerEffects],
    store: typeof path === 'string' ? sqliteStore({ path }) : path,
    worker: httpWorkerQueue({ pollMs }),
    authorize: bearerAuth({ worker: TOKEN }),
  })
  open.push(engine)
  return engine
}

/** Polls the engine (the worker runs on the wall clock, nothing here is a timed assert). */
async function settled(engine: Engine, runId: string, ms = 20_000) {
  const end = Date.now() + ms
  for (;;) {
    const state = await engine.getRun(runId)
    if (state.status !== 'running' || Date.now() > end) return state
    await new Promise((r) => setTimeout(r, 25))
  }
}

const claimOver = async (url: string, waitMs = 0) => {
  const res = await fetch(`${url}/workers/tasks/claim`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ types: ['w.plain'], max: 10, waitMs }),
  })
  expect(res.status).toBe(200)
  return (await res.json()).tasks as Array<{ runId: string; effectId: string; attempt: number }>
}

describe('durable worker tasks', () => {
  it('a task dispatched while no worker runs survives a restart and completes the run', async () => {
    const path = join(dir, `${++files}.db`)
    const before = host(path)
    await before.start(flow, undefined, { runId: 'restart-1' })
    await (await before.runtime).idle()
    expect((await before.inspectRun('restart-1')).effects[0].status).toBe('dispatched')
    await before.stop()

    const after = host(path)
    const server = await after.serve({ port: 0 })
    const worker = runHttpWorker({
      url: server.url,
      token: TOKEN,
      types: ['w.plain'],
      waitMs: 200,
      handle: (task) => ({ doubled: (task.input as { n: number }).n * 2 }),
    })
    try {
      const state = await settled(after, 'restart-1')
      expect(state.status).toBe('completed')
      expect(state.output).toEqual({ a: { doubled: 2 }, b: { got: { doubled: 2 } } })
    } finally {
      await worker.stop()
      await server.close()
    }
  })

  it('another host on the store hands out the task, once, recorded started', async () => {
    const path = join(dir, `${++files}.db`)
    const a = host(path)
    const b = host(path)
    await a.start(flow, undefined, { runId: 'hosts-1' })
    await (await a.runtime).idle()
    const server = await b.serve({ port: 0 })
    try {
      const [task, ...rest] = await claimOver(server.url)
      expect(rest).toEqual([])
      expect(task).toMatchObject({ runId: 'hosts-1', attempt: 1 })
      expect(await claimOver(server.url)).toEqual([])
      expect((await b.inspectRun('hosts-1')).effects[0].status).toBe('started')
      const stored = await (await b.store).workerTasks?.list()
      expect(stored).toEqual([])
    } finally {
      await server.close()
    }
  })

  // The long poll's own re-look is an hour away: only a hint from the store can wake it
  // before its 20 s wait ends (and an empty answer fails the test).
  const wokenAcrossHosts = async (a: Engine, b: Engine, runId: string) => {
    const server = await b.serve({ port: 0 })
    try {
      const waiting = claimOver(server.url, 20_000)
      // The claim is waiting on b before a dispatches (b has answered a first look).
      await new Promise((r) => setTimeout(r, 300))
      await a.start(flow, undefined, { runId })
      const tasks = await waiting
      expect(tasks.map((t) => t.runId)).toEqual([runId])
    } finally {
      await server.close()
    }
  }

  it('a long poll on one host is woken by a task another host dispatched (SQLite)', async () => {
    const path = join(dir, `${++files}.db`)
    await wokenAcrossHosts(host(path, 3_600_000), host(path, 3_600_000), 'woken-sqlite')
  })

  if (postgresAvailable('durable-tasks')) {
    const schemas = testSchemas('durable-tasks')
    it('a long poll on one host is woken by a task another host dispatched (Postgres LISTEN/NOTIFY)', async () => {
      const schema = schemas.next()
      const store = () => postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 4 })
      const a = store()
      await a.ready()
      await wokenAcrossHosts(host(a, 3_600_000), host(store(), 3_600_000), 'woken-pg')
    })
  }
})
