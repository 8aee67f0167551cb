import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import {
  defineEffect,
  defineInput,
  defineModule,
  type EventStore,
  memoryRunIndex,
  memoryStore,
  type RunIndex,
  type WaitUrl,
} from 'skein'
import { createEngineClient } from 'skein/client'
import { postgresRunIndex, postgresStore } from 'skein/postgres'
import { sqliteRunIndex, sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

// deleteRun (docs/data-lifecycle.md): a run goes whole from every table of the store, its
// deletion reaches projectors, its payloads stay in no page of the SQLite file, and a later
// start with the same id is a new run.

/** Written into every payload of the run, looked for in the raw storage after the delete. */
const MARKER = 'card-4111-1111-PLAINTEXT'

const dir = mkdtempSync(join(tmpdir(), 'skein-delete-run-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const opened: EventStore[] = []
const newEngine = enginesStoppedAfterEach()
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close?.()
})

const sent = new Map<string, WaitUrl>()
const mail = defineModule({
  namespace: 'mail',
  events: {
    go: defineInput(z.object({ note: z.string() })),
    answered: defineInput(z.object({ ok: z.boolean() })),
  },
  effects: {
    send: defineEffect({
      execute: (input: { to: string; waitUrl: WaitUrl }, ctx) => {
        sent.set(ctx.runId, input.waitUrl)
        return { sentTo: input.to }
      },
    }),
    echo: defineEffect({ execute: async (input: { card: string }) => input }),
  },
})
/** Events, an effect, a keyed signal, a wait URL token and snapshots: a row in every table. */
const full = defineWorkflow({
  name: 'full',
  nodes: {
    a: { run: (ctx) => ctx.invoke('mail.echo', { card: MARKER }) },
    go: { after: ['a'], run: (ctx) => ctx.waitFor('mail.go') },
    ask: {
      after: ['go'],
      run: (ctx) =>
        ctx.waitForUrl({
          send: 'mail.send',
          input: { to: `${MARKER}@example.com` },
          event: 'mail.answered',
        }),
    },
    done: { after: ['ask'], run: () => ({ card: MARKER }) },
  },
})
const parked = defineWorkflow({
  name: 'parked',
  nodes: { w: { run: (ctx) => ctx.waitFor('mail.go') } },
})
const modules = [mail, workflow({ definitions: [full, parked] })]

interface Kind {
  name: string
  open(): { store: EventStore; index: RunIndex; rowsOf?: (runId: string) => Promise<RowCount> }
  rawFiles?: () => string[]
}
/** Rows per table that hold the run (by run_id or run_no). */
type RowCount = Record<string, number>

const kinds: Kind[] = [
  {
    name: 'memory',
    open: () => ({ store: memoryStore(), index: memoryRunIndex() }),
  },
]
let file = ''
kinds.push({
  name: 'sqlite',
  open() {
    file = join(dir, `${kinds.length}-${Date.now()}.db`)
    const store = sqliteStore({ path: file })
    opened.push(store)
    const index = sqliteRunIndex({ store })
    return { store, index, rowsOf: async (runId) => sqliteRows(file, runId) }
  },
  rawFiles: () => [file, `${file}-wal`].filter((f) => existsSync(f)),
})
if (postgresAvailable('delete-run')) {
  const schemas = testSchemas('delete-run')
  kinds.push({
    name: 'postgres',
    open() {
      const schema = schemas.next()
      const store = postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 3 })
      opened.push(store)
      const index = postgresRunIndex({ store })
      return {
        store,
        index,
        rowsOf: async (runId) => postgresRows(schemas.admin, schema, runId),
      }
    },
  })
}

/** Every table of the file, enumerated from the schema: rows keyed by the run's id or number. */
function sqliteRows(path: string, runId: string): RowCount {
  const db = new Database(path, { readonly: true })
  try {
    const counts: RowCount = {}
    if (!runNos.has(runId)) {
      const no = db.prepare('SELECT run_no FROM skein_runs WHERE run_id = ?').pluck().get(runId)
      runNos.set(runId, no as number)
    }
    const runNo = runNos.get(runId)
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'skein_%'")
      .pluck()
      .all() as string[]
    for (const table of tables) {
      const columns = (db.pragma(`table_info(${table})`) as Array<{ name: string }>).map(
        (c) => c.name,
      )
      let n = 0
      if (columns.includes('run_id')) {
        n += db
          .prepare(`SELECT count(*) FROM ${table} WHERE run_id = ?`)
          .pluck()
          .get(runId) as number
      }
      // A table keyed by run id is checked by it (an actor registry's run_no is its own).
      else if (columns.includes('run_no') && runNo !== undefined) {
        n += db
          .prepare(`SELECT count(*) FROM ${table} WHERE run_no = ?`)
          .pluck()
          .get(runNo) as number
      }
      counts[table] = n
    }
    return counts
  } finally {
    db.close()
  }
}

async function postgresRows(
  admin: ReturnType<typeof testSchemas>['admin'],
  schema: string,
  runId: string,
): Promise<RowCount> {
  const { rows } = await admin.query(
    `SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = $1 AND column_name IN ('run_id', 'run_no')`,
    [schema],
  )
  const counts: RowCount = {}
  if (!runNos.has(runId)) {
    const found = await admin.query(
      `SELECT run_no::int AS n FROM "${schema}".skein_runs WHERE run_id = $1`,
      [runId],
    )
    runNos.set(runId, found.rows[0].n)
  }
  const runNo = runNos.get(runId)
  const byId = new Set(rows.filter((r) => r.column_name === 'run_id').map((r) => r.table_name))
  for (const { table_name: table, column_name: column } of rows) {
    // A table keyed by run id is checked by it (an actor registry's run_no is its own).
    if (column === 'run_no' && (runNo === undefined || byId.has(table))) continue
    const value = column === 'run_id' ? runId : runNo
    const found = await admin.query(
      `SELECT count(*)::int AS n FROM "${schema}"."${table}" WHERE ${column} = $1`,
      [value],
    )
    counts[table] = (counts[table] ?? 0) + found.rows[0].n
  }
  return counts
}

/** The run's number in the SQL stores, read before the delete (its rows are keyed by it). */
const runNos = new Map<string, number>()

const post = (
  engine: { fetch(r: Request): Promise<Response | null> },
  url: string,
  body: unknown,
) =>
  engine.fetch(
    new Request(`http://skein.test${url}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )

const settled = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 400; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('never settled')
}

describe.each(kinds)('deleteRun on $name', (kind) => {
  it('removes every row of the run from every table, tells projectors, and keeps other runs', async () => {
    const { store, index, rowsOf } = kind.open()
    const engine = newEngine({
      store,
      modules,
      snapshotEvery: 2,
      projectors: [index.projector],
      projectorOptions: { pollMs: 10 },
      authorize: () => true,
    })
    const runId = 'delete-me'
    await engine.start(full, undefined, { runId, wait: 'settled' })
    await engine.signal(runId, [{ type: 'mail.go', payload: { note: MARKER } }], {
      idempotencyKey: 'go-once',
      wait: 'settled',
    })
    const token = sent.get(runId)?.url as string
    expect((await post(engine, token, { ok: true }))?.status).toBe(200)
    expect((await engine.getRun(runId)).status).toBe('completed')
    const keep = await engine.start(full, undefined, { runId: 'keep-me', wait: 'settled' })
    await settled(async () => (await index.get(runId))?.status === 'completed')

    if (rowsOf) {
      const before = await rowsOf(runId)
      // The run is in the tables a finished run keeps rows in (the lease is on the run row).
      for (const table of [
        'skein_runs',
        'skein_idempotency',
        'skein_snapshots',
        'skein_wait_urls',
        'skein_run_index',
      ]) {
        expect(before[table], table).toBeGreaterThan(0)
      }
    }

    const deleted = await engine.deleteRun(runId)
    expect(deleted).toMatchObject({ runId, status: 'completed' })
    expect(deleted.tail).toBeGreaterThan(5)

    await expect(engine.getRun(runId)).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    await expect(engine.getEvents(runId)).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    await expect(engine.deleteRun(runId)).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    expect(await store.tail(runId)).toBe(0)
    expect(await store.snapshots?.list(runId)).toEqual([])
    expect(await store.leases?.readLease(runId)).toBeNull()
    expect(await engine.listRuns()).not.toContain(runId)
    const summaries = await engine.listRunSummaries()
    expect(summaries.runs.map((r) => r.runId)).toEqual(['keep-me'])
    expect((await engine.getRun(keep.runId)).status).toBe('running')

    // Projectors see the deletion after the run's last event: the run index drops its row.
    const feed = await store.feed!.readAfter(0, 10_000)
    const ofRun = feed.filter((e) => e.event.runId === runId)
    expect(ofRun.map((e) => e.event.type)).toEqual(['runtime.run.deleted'])
    expect(ofRun[0].event.payload).toEqual({ reason: 'request', tail: deleted.tail })
    await settled(async () => (await index.get(runId)) === null)
    expect(await index.get(keep.runId)).not.toBeNull()

    if (rowsOf) {
      const after = await rowsOf(runId)
      const left = Object.entries(after).filter(
        ([table, n]) => n > 0 && table !== 'skein_deletions',
      )
      expect(left).toEqual([])
      // The deletion's record (run id, reason, tail, time: no payload) is the one row left.
      expect(after.skein_deletions).toBe(1)
    }
    if (kind.rawFiles) {
      // keep-me holds the marker too: stop it, then no byte of either file may hold it.
      await engine.deleteRun(keep.runId, { force: true })
      for (const raw of kind.rawFiles()) {
        expect(readFileSync(raw).includes(MARKER), raw).toBe(false)
      }
    }
  })

  it('refuses a run that has not finished unless forced, and a later start with the id is a new run', async () => {
    const { store } = kind.open()
    const engine = newEngine({ store, modules })
    const { runId } = await engine.start(parked, undefined, { runId: 'busy' })
    await expect(engine.deleteRun(runId)).rejects.toMatchObject({ code: 'RUN_NOT_FINISHED' })
    expect((await engine.getRun(runId)).status).toBe('running')
    await expect(engine.deleteRun(runId, { force: 'yes' } as never)).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
    })
    await expect(engine.deleteRun('nobody')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    await expect(engine.deleteRun('bad id!')).rejects.toMatchObject({ code: 'INVALID_INPUT' })

    expect(await engine.deleteRun(runId, { force: true })).toMatchObject({ status: 'running' })
    await expect(
      engine.signal(runId, [{ type: 'mail.go', payload: { note: 'x' } }]),
    ).rejects.toMatchObject({
      code: 'RUN_NOT_FOUND',
    })
    const again = await engine.start(parked, undefined, { runId: 'busy' })
    expect(again.state.lastSeq).toBeLessThan(10)
    const events = await engine.getEvents(runId)
    expect(events[0]).toMatchObject({ seq: 1, type: 'runtime.run.started' })
  })

  it('DELETE /runs/:id with operations access, through the client', async () => {
    const { store } = kind.open()
    const seen: string[] = []
    const engine = newEngine({
      store,
      modules,
      authorize: (_request, { route, access }) => {
        seen.push(`${route}:${access}`)
        return true
      },
    })
    const client = createEngineClient({
      baseUrl: 'http://skein.test',
      fetch: async (request) => (await engine.fetch(request)) as Response,
    })
    const { runId } = await engine.start(parked, undefined, { runId: 'over-http' })
    await expect(client.deleteRun(runId)).rejects.toMatchObject({
      status: 409,
      code: 'RUN_NOT_FINISHED',
    })
    expect(seen).toContain('runs.delete:operations')
    const result = await client.deleteRun(runId, { force: true })
    expect(result.deleted).toMatchObject({ runId, status: 'running' })
    await expect(client.deleteRun(runId)).rejects.toMatchObject({
      status: 404,
      code: 'RUN_NOT_FOUND',
    })
    const bad = await engine.fetch(
      new Request(`http://skein.test/runs/${runId}?force=1`, { method: 'DELETE' }),
    )
    expect(bad?.status).toBe(400)
  })
})
