// Debounce windows in the store (skein_flow_debounce; docs/flow-control.md, "Debounce"): a
// window whose start died between its store call and its run's log is recovered by the sweep
// (the run is started, on the window's last input, with the id its callers were given), and
// deleting a run leaves no window behind. On a SQLite file and on a Postgres schema.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { createEngine, type EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'
import { until } from './flow-hosts.js'

type Edit = { doc: string; text: string }
const save = defineWorkflow({
  name: 'save',
  flow: { debounce: { periodMs: 200, key: (input: Edit) => input.doc } },
  nodes: { save: { run: (ctx) => ctx.input } },
})
const parked = defineWorkflow({
  name: 'parked',
  flow: { debounce: { periodMs: 60_000, key: (input: Edit) => input.doc } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

function engineOn(store: EventStore) {
  const engine = createEngine({
    store,
    // A start's hold (how long its entry waits for its log) is the lease's time: 1 s here.
    ownership: { leaseMs: 1000 },
    modules: [workflow({ definitions: [save, parked] })],
  })
  closers.unshift(() => engine.stop())
  return engine
}

function windowProofs(open: () => { store: EventStore; windows: () => Promise<number> }) {
  it('a window whose start died before writing its log: the sweep starts its run, on the last input, under the id its callers got', async () => {
    const { store, windows } = open()
    const engine = engineOn(store)
    await engine.ready()
    // What a start that died between its store call and its log leaves behind (an open window
    // and its queue entry, no log), and a second start that joined it and was given its id.
    const now = Date.now()
    const entry = { queue: 'workflow:save', key: '', priority: 0, startAt: now }
    const window = (runId: string, text: string, at: number) =>
      store.flow!.debounce({
        entry: { ...entry, runId, enqueuedAt: at },
        key: 'd1',
        input: { doc: 'd1', text },
        periodMs: 200,
        abandonedBefore: at - 30_000,
      })
    expect((await window('orphan', 'first', now)).opened).toBe(true)
    expect((await window('joiner', 'last', now + 1)).runId).toBe('orphan')
    expect(await windows()).toBe(1)
    let status = ''
    await until(
      'the orphaned window to be started and its run to complete',
      async () => {
        status = await engine.getRun('orphan').then(
          (s) => s.status,
          () => 'missing',
        )
        return status === 'completed'
      },
      30_000,
    )
    const run = await engine.getRun('orphan')
    const log = await engine.getEvents('orphan')
    const types = log.map((e) => e.type)
    console.log(
      `SCORE flow-debounce-orphan-recovered status=${run.status} admitted=${types.filter((t) => t === 'runtime.run.admitted').length} output_text=${(run.output as { save: Edit }).save.text}`,
    )
    expect(run.output).toEqual({ save: { doc: 'd1', text: 'last' } })
    expect(types.filter((t) => t === 'runtime.run.started')).toHaveLength(1)
    expect(types.filter((t) => t === 'runtime.run.admitted')).toHaveLength(1)
    // A start of the key now opens a new window (the old one ended with its run).
    const next = await engine.start(save, { doc: 'd1', text: 'again' })
    expect(next.runId).not.toBe('orphan')
  }, 60_000)

  it('deleting a run in an open window leaves no window row', async () => {
    const { store, windows } = open()
    const engine = engineOn(store)
    await engine.ready()
    const { runId, state } = await engine.start(parked, { doc: 'd2', text: 'x' })
    expect(state.status).toBe('queued')
    expect(await windows()).toBe(1)
    await engine.deleteRun(runId, { force: true })
    expect(await windows()).toBe(0)
    // The key's next start opens a window of its own.
    const again = await engine.start(parked, { doc: 'd2', text: 'y' })
    expect(again.runId).not.toBe(runId)
    expect(await windows()).toBe(1)
  }, 30_000)
}

describe('debounce windows on a SQLite file', () => {
  windowProofs(() => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-debounce-windows-'))
    const path = join(dir, 'runs.db')
    const store = sqliteStore({ path })
    closers.push(async () => {
      await store.close?.()
      rmSync(dir, { recursive: true, force: true })
    })
    const windows = async () => {
      const db = new Database(path, { readonly: true })
      try {
        return (db.prepare('SELECT count(*) AS n FROM skein_flow_debounce').get() as { n: number })
          .n
      } finally {
        db.close()
      }
    }
    return { store, windows }
  })
})

if (postgresAvailable('debounce-windows')) {
  const schemas = testSchemas('debounce_windows')
  describe('debounce windows on a Postgres schema', () => {
    windowProofs(() => {
      const schema = schemas.next()
      const store = postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 4 })
      closers.push(async () => store.close())
      const windows = async () => {
        const { rows } = await schemas.admin.query(
          `SELECT count(*)::int AS n FROM "${schema}".skein_flow_debounce`,
        )
        return rows[0].n as number
      }
      return { store, windows }
    })
  })
}
