// Worker tasks live in the store (docs/workers.md, "Durable tasks"): a task dispatched before a
// restart is claimed after it, and any host on the store hands out any run's tasks.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bearerAuth, createEngine, type Engine, httpWorkerQueue, runHttpWorker } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { FLOWS, workerEffects } from './helpers.js'

const TOKEN = 'worker-token-durable-0123456789'
const flow = FLOWS.find((f) => f.name === 'flow-w.plain')!
const dir = mkdtempSync(join(tmpdir(), 'skein-durable-tasks-'))
let files = 0

const open: Engine[] = []
afterEach(async () => {
  for (const engine of open.splice(0)) await engine.stop()
})

function host(path: string): Engine {
  const engine = createEngine({
    modules: [workflow({ definitions: [flow] }), workerEffects],
    store: sqliteStore({ path }),
    worker: httpWorkerQueue({ pollMs: 50 }),
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

const claimOver = async (url: string) => {
  const res = await fetch(`${url}/workers/tasks/claim`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ types: ['w.plain'], max: 10 }),
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
})
