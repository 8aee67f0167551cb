import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { createEngine, type EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { childWithin } from '../support/children.js'
import { appendFinishedRuns, appendRuns } from '../support/finished-runs.js'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

// kill -9 during a retention sweep (docs/data-lifecycle.md): every run is there whole or gone
// whole, each gone run left exactly its deletion record, and the runs that must stay (still
// running, or finished within the limit) are all there after a second process finished the
// sweep.

const dir = mkdtempSync(join(tmpdir(), 'skein-sweep-kill-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const RUNS = 3000
const EVENTS = 4
const STAYING = 100
/** The sweeps' limit: the old runs finished at the epoch, the recent ones now. */
const HOUR = 3_600_000

type Query = (sql: string) => Promise<Array<Record<string, unknown>>>

/** One store under test: how a process opens it, how the child is told, how rows are read. */
interface Target {
  name: 'sqlite' | 'postgres'
  open(): EventStore
  childArgs: string[]
  /** Runs `inspect` on one consistent view of the database. */
  read<T>(inspect: (query: Query) => Promise<T>): Promise<T>
  /** The database's own consistency check, where it has one. */
  integrity(): Promise<string>
}

// Each try on a file of its own: a retried test must not find the first try's runs.
let tries = 0

function sqliteTarget(): Target {
  const path = join(dir, `runs-${++tries}.db`)
  const withDb = async <T>(use: (db: Database.Database) => Promise<T>): Promise<T> => {
    const db = new Database(path)
    try {
      return await use(db)
    } finally {
      db.close()
    }
  }
  return {
    name: 'sqlite',
    open: () => sqliteStore({ path }),
    childArgs: ['sqlite', path],
    read: (inspect) =>
      withDb((db) =>
        inspect(async (sql) => db.prepare(sql).all() as Array<Record<string, unknown>>),
      ),
    integrity: () =>
      withDb(async (db) => String(db.prepare('PRAGMA integrity_check').pluck().get())),
  }
}

function postgresTarget(schema: string): Target {
  return {
    name: 'postgres',
    open: () => postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 3 }),
    childArgs: ['postgres', PG_URL, schema],
    async read(inspect) {
      const client = new pg.Client({ connectionString: PG_URL })
      await client.connect()
      try {
        await client.query(`BEGIN ISOLATION LEVEL REPEATABLE READ; SET search_path TO "${schema}"`)
        return await inspect(async (sql) => (await client.query(sql)).rows)
      } finally {
        await client.end()
      }
    },
    integrity: async () => 'ok',
  }
}

interface Counts {
  runs: Map<string, { head: number; tail: number }>
  events: Map<string, number>
  orphans: number
  deleted: string[]
}

const inspect = async (query: Query): Promise<Counts> => {
  const runs = await query('SELECT run_id, head, tail FROM skein_runs')
  const events = await query(
    'SELECT r.run_id, count(*) AS n FROM skein_events e JOIN skein_runs r ON r.run_no = e.run_no GROUP BY r.run_id',
  )
  // Run number 0 is no run's: SQLite's keeper of the highest position given (kept-position.ts).
  const [orphans] = await query(
    'SELECT count(*) AS n FROM skein_events e WHERE e.run_no <> 0 AND NOT EXISTS (SELECT 1 FROM skein_runs r WHERE r.run_no = e.run_no)',
  )
  const deleted = await query('SELECT run_id FROM skein_deletions')
  return {
    runs: new Map(
      runs.map((r) => [String(r.run_id), { head: Number(r.head), tail: Number(r.tail) }]),
    ),
    events: new Map(events.map((r) => [String(r.run_id), Number(r.n)])),
    orphans: Number(orphans.n),
    deleted: deleted.map((r) => String(r.run_id)),
  }
}

/** Spawns the sweeping child and SIGKILLs it once it printed five deleting batches. */
async function killMidSweep(target: Target): Promise<void> {
  const child = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      join(import.meta.dirname, 'sweep-child.ts'),
      ...target.childArgs,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  child.stderr.on('data', (d) => (err += d))
  const exited = new Promise((resolve) => child.on('exit', resolve))
  await childWithin(
    'five deleting batches',
    { name: 'the sweeping child', proc: child, output: () => `${out}\n${err}` },
    new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        out += d
        if ((out.match(/batch 50/g) ?? []).length >= 5) resolve()
      })
      void exited.then(() => reject(new Error(`child exited first: ${err}`)))
    }),
    60_000,
  )
  child.kill('SIGKILL')
  await exited
}

const targets: Array<() => Target> = [sqliteTarget]
if (postgresAvailable('sweep-kill')) {
  const schemas = testSchemas('sweep-kill')
  targets.push(() => postgresTarget(schemas.next()))
}

describe.each(
  targets.map((make) => ({ make, name: make === sqliteTarget ? 'sqlite' : 'postgres' })),
)('a retention sweep killed mid-way on $name', ({ make }) => {
  it('leaves each run whole or gone, and every run that must stay whole', async () => {
    const target = make()
    const store = target.open()
    await appendFinishedRuns(store, RUNS, EVENTS)
    // Must stay: running for ages (never finished), and finished just now (within the limit).
    await appendRuns(store, {
      prefix: 'running',
      count: STAYING,
      events: EVENTS,
      status: 'running',
      updatedAt: 1,
    })
    await appendRuns(store, {
      prefix: 'recent',
      count: STAYING,
      events: EVENTS,
      status: 'completed',
      updatedAt: Date.now(),
    })
    await store.close?.()

    await killMidSweep(target)

    const after = await target.read(inspect)
    // Some, not all: the kill came mid-sweep.
    const old = [...after.runs.keys()].filter((id) => id.startsWith('old-'))
    expect(old.length).toBeGreaterThan(0)
    expect(old.length).toBeLessThan(RUNS)
    // Whole: every remaining run has all its events; gone: no event without its run.
    for (const [runId, { tail }] of after.runs) expect(after.events.get(runId), runId).toBe(tail)
    for (const [runId, { tail }] of after.runs) expect(tail, runId).toBe(EVENTS)
    expect(after.orphans).toBe(0)
    // The records that remain (older ones are pruned) name only runs that are gone.
    expect(after.deleted.filter((id) => after.runs.has(id))).toEqual([])
    expect(after.runs.size).toBe(old.length + 2 * STAYING)
    expect(await target.integrity()).toBe('ok')
    console.log(
      `SCORE retention-kill9 store=${target.name} runs=${RUNS} whole=${old.length} gone=${RUNS - old.length} half_deleted=0 staying=${2 * STAYING}/${2 * STAYING}`,
    )

    // A second process finishes the sweep: every old run gone, every staying run whole.
    const resumedStore = target.open()
    const resumed = createEngine({
      store: resumedStore,
      modules: [workflow({ definitions: [] })],
      retention: { finishedAfterMs: HOUR, batchSize: 500, intervalMs: 1000 },
    })
    await resumed.ready()
    try {
      for (let i = 0; ((await resumed.retention()).deletedTotal ?? 0) < old.length; i++) {
        if (i > 3000) throw new Error('the resumed sweep never finished')
        await new Promise((r) => setTimeout(r, 10))
      }
    } finally {
      await resumed.stop()
      await resumedStore.close?.()
    }
    const finished = await target.read(inspect)
    expect([...finished.runs.keys()].filter((id) => id.startsWith('old-'))).toEqual([])
    expect(finished.runs.size).toBe(2 * STAYING)
    for (const [runId, { tail }] of finished.runs) {
      expect(tail, runId).toBe(EVENTS)
      expect(finished.events.get(runId), runId).toBe(EVENTS)
    }
    expect(finished.orphans).toBe(0)
  }, 120_000)
})
