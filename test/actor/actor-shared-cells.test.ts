import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventStore } from 'skein'
import { type ActorHost, createActorHost, postgresRegistry, sharedCells } from 'skein/actor'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { freshPostgresStore, postgresAvailable, testSchemas } from '../support/postgres.js'
import { actorModules } from './actor-workload.js'

// Cells over one shared store: every cell's engine runs on the same store, its single writer
// made by the store's lease. The same cases on one SQLite file and on Postgres.

const dirs: string[] = []
const hosts: ActorHost[] = []
const stores: EventStore[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.stop()
  for (const store of stores.splice(0)) await store.close?.()
})
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

async function call(host: ActorHost, method: string, path: string, body?: unknown) {
  const init: RequestInit = { method }
  if (body !== undefined) {
    init.body = JSON.stringify(body)
    init.headers = { 'content-type': 'application/json' }
  }
  const res = await host.fetch(new Request(`http://actor.test${path}`, init))
  if (!res) throw new Error(`${method} ${path}: not answered`)
  return { status: res.status, body: (await res.json()) as any }
}

const start = (host: ActorHost, runId: string, ms: number) =>
  call(host, 'POST', '/runs', { kind: 'workflow', definitionName: 'nap', runId, input: { ms } })

async function until(what: string, check: () => Promise<boolean>, ms = 30_000) {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`not within ${ms} ms: ${what}`)
}

const backends: Array<{ name: string; store: () => EventStore; pg: boolean }> = [
  {
    name: 'one SQLite file',
    pg: false,
    store: () => {
      const dir = mkdtempSync(join(tmpdir(), 'skein-actor-shared-'))
      dirs.push(dir)
      return sqliteStore({ path: join(dir, 'shared.sqlite') })
    },
  },
]
const pgOk = postgresAvailable('actor-shared-cells')
if (pgOk) {
  const schemas = testSchemas('actor_shared_cells')
  backends.push({ name: 'Postgres', pg: true, store: () => freshPostgresStore(schemas) })
}

for (const backend of backends) {
  describe(`actor host: cells over a shared store (${backend.name})`, () => {
    const open = () => {
      const store = backend.store()
      stores.push(store)
      return store
    }
    const host = (store: EventStore, extra: Parameters<typeof createActorHost>[0] = {}) => {
      const h = createActorHost({
        modules: actorModules(),
        cells: sharedCells({ store, ownership: { pollMs: 50, leaseMs: 2000 } }),
        ...(backend.pg ? { registry: postgresRegistry({ store }) } : {}),
        sweepMs: 50,
        ...extra,
      })
      hosts.push(h)
      return h
    }

    it('serves runs from the shared store: unknown run 404, closing cells leaves the store open', async () => {
      const store = open()
      const h = host(store, { maxOpenCells: 2, idleTimeoutMs: 10 })
      expect((await call(h, 'GET', '/runs/nope')).status).toBe(404)
      for (const id of ['a', 'b', 'c', 'd']) expect((await start(h, id, 60_000)).status).toBe(200)
      // Four runs, two open cells at most: the others were closed, and the store still serves.
      expect(h.openCells()).toBeLessThanOrEqual(2)
      expect((await call(h, 'GET', '/runs/a')).body.state.status).toBe('running')
      expect(await store.tail('a')).toBeGreaterThan(0)
      // A refused start (unknown definition) leaves no run and no registry entry.
      const refused = await call(h, 'POST', '/runs', {
        kind: 'workflow',
        definitionName: 'missing',
        runId: 'x',
      })
      expect(refused.status).toBe(404)
      expect(await store.tail('x')).toBe(0)
      const listed = (await h.registry.list()).runs.map((r) => r.runId)
      expect(listed.sort()).toEqual(['a', 'b', 'c', 'd'])
    })

    it('a closed cell is opened again for its deadline (claimed from the store), and after a restart', async () => {
      const store = open()
      const first = host(store, { idleTimeoutMs: 10 })
      expect((await start(first, 'sleepy', 2600)).status).toBe(200)
      expect((await start(first, 'later', 3000)).status).toBe(200)
      // The host stops before the deadlines: a new host on the same store fires them.
      await first.stop()
      const second = host(store, { idleTimeoutMs: 10 })
      await until('both runs completed', async () => {
        const a = await call(second, 'GET', '/runs/sleepy')
        const b = await call(second, 'GET', '/runs/later')
        return a.body.state.status === 'completed' && b.body.state.status === 'completed'
      })
      const events = await store.read('sleepy')
      expect(events.filter((e) => e.type === 'runtime.timer.fired').length).toBe(1)
    })

    it('a due run is claimed while every open cell is idle (one closes for it)', async () => {
      const store = open()
      const h = host(store, { maxOpenCells: 2, idleTimeoutMs: 600_000 })
      expect((await start(h, 'due-soon', 2500)).status).toBe(200)
      // Two runs with far deadlines fill the table; the due one's cell is closed.
      expect((await start(h, 'far-1', 3_600_000)).status).toBe(200)
      expect((await start(h, 'far-2', 3_600_000)).status).toBe(200)
      expect(h.openCells()).toBe(2)
      await until('the due run completed (read from the store, not through the host)', async () => {
        const events = await store.read('due-soon')
        return events.at(-1)?.type === 'runtime.run.completed'
      })
      expect(h.openCells()).toBeLessThanOrEqual(2)
    })
  })
}
