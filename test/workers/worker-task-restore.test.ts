// Restoring the task of an attempt recorded `dispatched` whose task was never stored
// (docs/workers.md, "Durable tasks"): insert-if-absent under the run's lease, the same attempt,
// never a second row, never a row for an attempt a claim recorded `started`. The gap itself is
// simulated by removing the stored task; test/workers/dispatch-gap.test.ts kills a real host in it.
import { join } from 'node:path'
import { bearerAuth, createEngine, type Engine, type HttpWorkerQueue, httpWorkerQueue } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../support/children.js'
import { freshDir, tempDirs } from '../support/temp-dirs.js'
import { FLOWS, workerEffects } from './helpers.js'

const flow = FLOWS.find((f) => f.name === 'flow-w.plain')!
const dirs = tempDirs('skein-task-restore-')
const open: Engine[] = []
afterEach(async () => {
  for (const engine of open.splice(0)) await engine.stop()
})

function host(path: string): Engine {
  const engine = createEngine({
    modules: [workflow({ definitions: [flow] }), workerEffects],
    store: sqliteStore({ path }),
    worker: httpWorkerQueue(),
    authorize: bearerAuth({ worker: 'restore-worker-token-0123456789' }),
  })
  open.push(engine)
  return engine
}

async function dispatchedRun(engine: Engine, runId: string) {
  await engine.start(flow, undefined, { runId })
  const runtime = await engine.runtime
  await runtime.idle()
  const tasks = (await engine.store).workerTasks!
  const [stored] = await tasks.list(runId)
  expect(stored.task).toMatchObject({ runId, attempt: 1, type: 'w.plain' })
  return { runtime, tasks, key: { runId, effectId: stored.task.effectId, attempt: 1 } }
}

describe("restoring a dispatched attempt's task", () => {
  it('stores the missing task once, however often (and concurrently) it is restored', async () => {
    const engine = host(join(freshDir(dirs.root), 'a.db'))
    const { runtime, tasks, key } = await dispatchedRun(engine, 'twice')
    expect(await tasks.remove(key)).toBe(true)
    await runtime.restoreWorkerTasks!('twice')
    await runtime.restoreWorkerTasks!('twice')
    await Promise.all([runtime.restoreWorkerTasks!('twice'), runtime.restoreWorkerTasks!('twice')])
    const rows = await tasks.list('twice')
    expect(rows.map((r) => [r.task.effectId, r.task.attempt])).toEqual([[key.effectId, 1]])
    expect((await engine.inspectRun('twice')).effects[0]).toMatchObject({
      status: 'dispatched',
      attempt: 1,
    })
  })

  it('leaves a stored task as it is, claim and all', async () => {
    const engine = host(join(freshDir(dirs.root), 'b.db'))
    const { runtime, tasks } = await dispatchedRun(engine, 'held')
    const [claimed] = await tasks.claim({
      types: null,
      max: 1,
      owner: 'someone',
      now: Date.now(),
      expiresAt: Date.now() + 60_000,
    })
    await runtime.restoreWorkerTasks!('held')
    const [row] = await tasks.list('held')
    expect(row).toMatchObject({ owner: 'someone', epoch: claimed.epoch })
  })

  it('stores nothing for an attempt a claim recorded started and handed out', async () => {
    const engine = host(join(freshDir(dirs.root), 'c.db'))
    const { runtime, tasks } = await dispatchedRun(engine, 'started')
    const queue = runtime.worker as HttpWorkerQueue
    const handed = await queue.claim({ start: (t) => runtime.startClaimedTasks!(t) })
    expect(handed.map((t) => t.attempt)).toEqual([1])
    expect((await engine.inspectRun('started')).effects[0].status).toBe('started')
    await runtime.restoreWorkerTasks!('started')
    expect(await tasks.list('started')).toEqual([])
  })

  it('stores nothing for a finished run', async () => {
    const engine = host(join(freshDir(dirs.root), 'd.db'))
    const { runtime, tasks } = await dispatchedRun(engine, 'cancelled')
    await engine.cancel('cancelled')
    expect(await tasks.list('cancelled')).toEqual([])
    await runtime.restoreWorkerTasks!('cancelled')
    expect(await tasks.list('cancelled')).toEqual([])
  })

  it('a booting engine stores the tasks another process never stored, and only those', async () => {
    const path = join(freshDir(dirs.root), 'e.db')
    const before = host(path)
    const lost = await dispatchedRun(before, 'lost')
    const kept = await dispatchedRun(before, 'kept')
    await lost.tasks.remove(lost.key)
    await before.stop()
    open.splice(open.indexOf(before), 1)

    const after = host(path)
    const tasks = (await after.store).workerTasks!
    await waitFor('the lost task to be stored again', async () => {
      const rows = await tasks.list('lost')
      return rows.length === 1
    })
    const rows = await tasks.list()
    expect(rows.map((r) => [r.task.runId, r.task.effectId, r.task.attempt])).toEqual([
      ['kept', kept.key.effectId, 1],
      ['lost', lost.key.effectId, 1],
    ])
  })
})
