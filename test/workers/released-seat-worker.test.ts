// A run that parked waiting for its worker (the writer that let its lease go was dropped:
// runCacheSize 0) is taken back by the claim that records `started` and by the worker's
// callback without reading the lease first. Should another process have taken the run since,
// the commit is refused and the call reads the lease and goes on from what the store holds.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bearerAuth, createEngine, type EventStore, httpWorkerQueue } from 'skein'
import { workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { leaseReadCountingStore } from '../support/lease-reads.js'
import { freshPath } from '../support/temp-dirs.js'
import { FLOWS, workerEffects } from './helpers.js'

const TOKEN = 'worker-token-released-seat-0123456789'
const flow = FLOWS.find((f) => f.name === 'flow-w.plain')!
const dir = mkdtempSync(join(tmpdir(), 'skein-released-seat-worker-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function host(store: EventStore) {
  return createEngine({
    store,
    modules: [workflow({ definitions: [flow] }), workerEffects],
    worker: httpWorkerQueue(),
    authorize: bearerAuth({ worker: TOKEN }),
    ownership: { owner: 'a', pollMs: 600_000 },
  })
}

const post = async (url: string, path: string, body: unknown) => {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  expect(res.status).toBe(200)
  return res.json()
}

const claim = async (url: string) =>
  (await post(url, '/workers/tasks/claim', { types: ['w.plain'], max: 10 })).tasks as Array<{
    runId: string
    effectId: string
    attempt: number
  }>

const complete = (url: string, task: { runId: string; effectId: string; attempt: number }) =>
  post(url, '/workers/tasks/callbacks', {
    callbacks: [
      {
        runId: task.runId,
        effectId: task.effectId,
        attempt: task.attempt,
        kind: 'complete',
        result: { doubled: 2 },
      },
    ],
  })

describe('workers: a run parked for its worker, let go by this process', () => {
  it('is taken back by the claim and by the callback without reading the lease', async () => {
    const { store, inner, reads } = leaseReadCountingStore(freshPath(dir, 'one.db'))
    const engine = host(store)
    const server = await engine.serve({ port: 0 })
    try {
      await engine.start(flow, undefined, { runId: 'w1' })
      await (await engine.runtime).idle()
      expect((await inner.leases!.readLease('w1'))?.expiresAt).toBeLessThanOrEqual(Date.now())
      reads.length = 0
      const [task] = await claim(server.url)
      expect(task.runId).toBe('w1')
      await (await engine.runtime).idle()
      expect(await complete(server.url, task)).toMatchObject({
        results: [{ runId: 'w1', status: 'completed' }],
      })
      expect(reads).toEqual([])
      // dispatched at 1, the claim's `started` at 2, the callback at 3
      expect((await inner.leases!.readLease('w1'))?.epoch).toBe(3)
    } finally {
      await server.close()
      await engine.stop()
      await inner.close()
    }
  })

  it('another process took the run since: the callback reads the lease and is recorded once', async () => {
    const { store, inner, reads } = leaseReadCountingStore(freshPath(dir, 'two.db'))
    const engine = host(store)
    const server = await engine.serve({ port: 0 })
    try {
      await engine.start(flow, undefined, { runId: 'w2' })
      const [task] = await claim(server.url)
      await (await engine.runtime).idle()
      // Another process takes the run's lease (epoch 3) and lets it go again.
      const lease = (await inner.leases!.readLease('w2'))!
      const now = Date.now()
      const taken = { owner: 'b', epoch: lease.epoch + 1, expiresAt: now + 60_000, now }
      await inner.leases!.renewLease('w2', taken)
      await inner.leases!.releaseLease('w2', 'b', taken.epoch)
      reads.length = 0
      expect(await complete(server.url, task)).toMatchObject({
        results: [{ runId: 'w2', status: 'completed' }],
      })
      expect(reads).toEqual(['w2'])
      const events = await inner.read('w2')
      expect(events.filter((e) => e.type === 'runtime.effect.completed')).toHaveLength(1)
      expect((await inner.leases!.readLease('w2'))?.epoch).toBe(taken.epoch + 1)
    } finally {
      await server.close()
      await engine.stop()
      await inner.close()
    }
  })
})
