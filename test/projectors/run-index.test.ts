import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  defineEffect,
  defineModule,
  defineProjector,
  type EventStore,
  memoryRunIndex,
  memoryStore,
  type RunIndex,
} from 'skein'
import { postgresRunIndex, postgresStore } from 'skein/postgres'
import { sqliteRunIndex, sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

// The built-in run index: one row per run kept by a projector, paged newest first
// and filtered by status and tenant; the same fold in memory and in SQLite.

const dir = mkdtempSync(join(tmpdir(), 'skein-run-index-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const newEngine = enginesStoppedAfterEach()

const fx = defineModule({
  namespace: 'ri',
  effects: {
    maybe: defineEffect<{ fail: boolean }, null>({
      retry: { maxAttempts: 1 },
      execute: async ({ fail }) => {
        if (fail) throw new Error('asked to fail')
        return null
      },
    }),
  },
})
const job = defineWorkflow({
  name: 'job',
  version: '2',
  nodes: {
    a: { run: (ctx) => ctx.invoke('ri.maybe', { fail: (ctx.input as any).fail }) },
  },
})
const tenant = ({ input }: { input: unknown }) => (input as { tenant?: string })?.tenant ?? null

async function until(check: () => Promise<boolean>, what: string) {
  const deadline = Date.now() + 20_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

const kinds: Array<[string, () => { index: RunIndex; store: EventStore }]> = [
  ['memory', () => ({ index: memoryRunIndex({ tenant }), store: memoryStore() })],
  [
    'sqlite',
    () => {
      const path = join(dir, `${Math.random().toString(36).slice(2)}.db`)
      const store = sqliteStore({ path })
      return { index: sqliteRunIndex({ store, tenant }), store }
    },
  ],
]

if (postgresAvailable('run-index')) {
  const schemas = testSchemas('run-index')
  kinds.push([
    'postgres',
    () => {
      const store = postgresStore(
        { connectionString: PG_URL },
        { schema: schemas.next(), maxConnections: 3 },
      )
      return { index: postgresRunIndex({ store, tenant }), store }
    },
  ])
}

describe.each(kinds)('run index (%s)', (_name, make) => {
  it('keeps each run’s kind, definition, status and tenant, paged newest first', async () => {
    const { index, store } = make()
    let tick = 1_000
    const engine = newEngine({
      store,
      modules: [workflow({ definitions: [job] }), fx],
      projectors: [index.projector],
      projectorOptions: { pollMs: 20, delayMs: 0 },
      clock: {
        now: () => tick++,
        setTimeout: (fn, ms) => setTimeout(fn, ms),
        clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
      },
    })
    const ids: string[] = []
    for (let i = 0; i < 7; i++) {
      const { runId } = await engine.start(job, {
        fail: i % 3 === 0,
        tenant: i % 2 ? 'acme' : 'zen',
      })
      ids.push(runId)
    }
    await until(async () => (await engine.projectors())[0].lagEvents === 0, 'index caught up')
    const one = await index.get(ids[1])
    expect(one).toMatchObject({
      runId: ids[1],
      kind: 'workflow',
      definitionName: 'job',
      definitionVersion: '2',
      status: 'completed',
      tenant: 'acme',
    })
    expect(one!.updatedAt).toBeGreaterThan(one!.createdAt)
    expect((await index.get(ids[0]))?.status).toBe('failed')

    const pages: string[][] = []
    let cursor: string | undefined
    do {
      const page = await index.list({ limit: 3, cursor })
      pages.push(page.runs.map((r) => r.runId))
      cursor = page.nextCursor ?? undefined
    } while (cursor)
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1])
    expect(pages.flat()).toEqual([...ids].reverse())
    const failed = await index.list({ status: 'failed' })
    expect(failed.runs.map((r) => r.runId)).toEqual([ids[6], ids[3], ids[0]])
    const acme = await index.list({ tenant: 'acme' })
    expect(acme.runs.map((r) => r.runId)).toEqual([ids[5], ids[3], ids[1]])
    await expect(index.list({ cursor: 'nope' })).rejects.toThrow(/cursor/)
    await engine.stop()
    await index.close?.()
    await store.close?.()
  })
})

it('a projector whose flush throws gets the whole round again, and nothing is lost', async () => {
  const handed: string[] = []
  let flushes = 0
  const flaky = defineProjector({
    name: 'flaky-flush',
    handle({ runId, events }) {
      handed.push(`${runId}:${events[0].seq}-${events[events.length - 1].seq}`)
    },
    flush() {
      flushes++
      if (flushes === 1) throw new Error('disk full')
    },
  })
  const engine = newEngine({
    modules: [workflow({ definitions: [job] }), fx],
    projectors: [flaky],
    projectorOptions: { pollMs: 20, delayMs: 0, backoff: { initialMs: 5, maxMs: 10 } },
  })
  const { runId } = await engine.start(job, { fail: false })
  await until(async () => (await engine.projectors())[0].lagEvents === 0, 'caught up')
  // The failed round came again from the same position (maybe with more events by then).
  expect(handed.filter((h) => h.startsWith(`${runId}:1-`)).length).toBe(2)
  const tail = (await engine.getEvents(runId)).length
  expect(handed.some((h) => h.endsWith(`-${tail}`))).toBe(true)
  expect((await engine.projectors())[0].lastError?.message).toBe('disk full')
})
