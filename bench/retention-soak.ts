// Retention soak (docs/data-lifecycle.md, "Retention"): a host with `retention: {
// finishedAfterMs: 2000 }` runs 20,000 short runs (SKEIN_BENCH_SOAK_RUNS) on SQLite and on
// Postgres (when SKEIN_PG_URL or the local server answers) while long-lived runs wait for a
// signal. Rows and bytes per table are read at the start, middle and end of the load and once
// the sweep drained it: they stop growing, and every live run is exactly as it was.
// test/data-lifecycle/soak.test.ts runs a reduced soak and asserts its outcomes.
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { createEngine, defineEffect, defineInput, defineModule, type EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { z } from 'zod'
import type { Row } from './table.js'

/** Rows and bytes (with its indexes) of each of the store's tables, and the store's bytes. */
export interface StoreSizes {
  tables: Record<string, { rows: number; bytes: number }>
  /** SQLite: the file and its WAL; Postgres: every table of the schema with its indexes. */
  totalBytes: number
}

/** Where a soak runs: a fresh store, how big it is now, and how to throw it away. */
export interface SoakStorage {
  label: string
  open(): EventStore
  sizes(): Promise<StoreSizes>
  /**
   * What the database's own upkeep would do, run every `everyMs` during the soak (Postgres:
   * a `VACUUM` of the store's tables when the server's autovacuum is off); `label` says so.
   */
  maintenance?(): Promise<{ everyMs: number; run(): Promise<void>; label: string } | undefined>
  drop(): Promise<void>
}

export interface SoakOptions {
  runs: number
  /** Runs started first that wait for a signal the whole time: the sweep must not touch them. */
  live: number
  concurrency: number
  /** The retention limit (default 2000 ms) and the sweep's interval (default 1000 ms). */
  finishedAfterMs?: number
  intervalMs?: number
  /** Drain: how long to wait for the sweep to delete the last finished runs. */
  drainTimeoutMs?: number
}

export interface SoakSample extends StoreSizes {
  phase: 'start' | 'middle' | 'end' | 'drained'
  runsDone: number
}

export interface SoakResult {
  label: string
  runs: number
  seconds: number
  samples: SoakSample[]
  /** Short runs that did not end `completed` (a run deleted under it would). */
  failures: number
  live: number
  /** Live runs whose log and status at the end were exactly those at the start. */
  liveUntouched: number
  /** Live runs that completed when signalled at the end. */
  liveCompleted: number
  deletedTotal: number
  /** The upkeep run beside the soak (`none`, or what `SoakStorage.maintenance` said). */
  maintenance: string
}

const fx = defineModule({
  namespace: 'soak',
  events: { go: defineInput(z.object({})) },
  effects: { step: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n + 1 }) },
})
const short = defineWorkflow({
  name: 'short',
  nodes: { a: { run: (ctx) => ctx.invoke('soak.step', { n: 1 }) } },
})
const held = defineWorkflow({
  name: 'held',
  nodes: {
    a: { run: (ctx) => ctx.invoke('soak.step', { n: 2 }) },
    w: { after: ['a'], run: (ctx) => ctx.waitFor('soak.go') },
  },
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function soakRetention(
  storage: SoakStorage,
  options: SoakOptions,
): Promise<SoakResult> {
  const store = storage.open()
  const engine = createEngine({
    store,
    modules: [fx, workflow({ definitions: [short, held] })],
    retention: {
      finishedAfterMs: options.finishedAfterMs ?? 2000,
      intervalMs: options.intervalMs ?? 1000,
      batchSize: 500,
    },
  })
  const samples: SoakSample[] = []
  const sample = async (phase: SoakSample['phase'], runsDone: number) => {
    samples.push({ phase, runsDone, ...(await storage.sizes()) })
  }
  const upkeep = await storage.maintenance?.()
  let upkeepRunning: Promise<void> = Promise.resolve()
  const upkeepTimer =
    upkeep &&
    setInterval(() => {
      upkeepRunning = upkeepRunning.then(() => upkeep.run())
    }, upkeep.everyMs)
  try {
    await engine.ready()
    const liveIds = Array.from({ length: options.live }, (_, i) => `live-${i}`)
    for (const runId of liveIds) await engine.start(held, undefined, { runId, wait: 'settled' })
    const before = new Map<string, string>()
    for (const runId of liveIds) before.set(runId, JSON.stringify(await engine.getEvents(runId)))

    const t0 = performance.now()
    const marks = new Map([
      [Math.floor(options.runs / 5), 'start' as const],
      [Math.floor(options.runs / 2), 'middle' as const],
    ])
    const sampling: Array<Promise<void>> = []
    let started = 0
    let done = 0
    let failures = 0
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        while (started < options.runs) {
          started++
          const { state } = await engine.start(short, undefined, { wait: 'settled' })
          if (state.status !== 'completed') failures++
          const phase = marks.get(++done)
          if (phase) sampling.push(sample(phase, done))
        }
      }),
    )
    const seconds = (performance.now() - t0) / 1000
    await Promise.all(sampling)
    await sample('end', done)

    let liveUntouched = 0
    for (const runId of liveIds) {
      const state = await engine.getRun(runId)
      const events = JSON.stringify(await engine.getEvents(runId))
      if (state.status === 'running' && events === before.get(runId)) liveUntouched++
    }
    // Drained: every finished run deleted, only the live runs left.
    const deadline = Date.now() + (options.drainTimeoutMs ?? 30_000)
    while ((await storage.sizes()).tables.skein_runs?.rows !== options.live) {
      if (Date.now() > deadline) break
      await sleep(200)
    }
    await sample('drained', done)
    const deletedTotal = (await engine.retention()).deletedTotal ?? 0

    let liveCompleted = 0
    for (const runId of liveIds) {
      await engine.signal(runId, [{ type: 'soak.go', payload: {} }])
      const completed = await engine.result(runId, { timeoutMs: 10_000 }).then(
        () => true,
        () => false,
      )
      if (completed) liveCompleted++
    }
    return {
      label: storage.label,
      runs: options.runs,
      seconds,
      samples,
      failures,
      live: options.live,
      liveUntouched,
      liveCompleted,
      deletedTotal,
      maintenance: upkeep?.label ?? 'none',
    }
  } finally {
    if (upkeepTimer) clearInterval(upkeepTimer)
    await upkeepRunning
    await engine.stop()
    await store.close?.()
  }
}

/** A SQLite file; bytes per table from `dbstat` (pages of the table and its indexes). */
export function sqliteSoakStorage(path: string): SoakStorage {
  return {
    label: 'sqlite',
    open: () => sqliteStore({ path }),
    async sizes() {
      const db = new Database(path, { readonly: true })
      try {
        const names = db
          .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'skein_%'`)
          .pluck()
          .all() as string[]
        const bytes = new Map(
          (
            db
              .prepare(
                'SELECT m.tbl_name AS name, sum(s.pgsize) AS bytes FROM dbstat s JOIN sqlite_master m ON m.name = s.name GROUP BY m.tbl_name',
              )
              .all() as Array<{ name: string; bytes: number }>
          ).map((r) => [r.name, r.bytes]),
        )
        const tables: StoreSizes['tables'] = {}
        for (const name of names) {
          const rows = db.prepare(`SELECT count(*) FROM "${name}"`).pluck().get() as number
          tables[name] = { rows, bytes: bytes.get(name) ?? 0 }
        }
        const wal = `${path}-wal`
        const totalBytes = statSync(path).size + (existsSync(wal) ? statSync(wal).size : 0)
        return { tables, totalBytes }
      } finally {
        db.close()
      }
    },
    drop: async () => {},
  }
}

/** A Postgres schema; bytes per table from `pg_total_relation_size` (with indexes and TOAST). */
export function postgresSoakStorage(url: string, schema: string): SoakStorage {
  const admin = new pg.Pool({ connectionString: url, max: 2 })
  return {
    label: 'postgres',
    open: () => postgresStore({ connectionString: url }, { schema, maxConnections: 4 }),
    async maintenance() {
      const { rows } = await admin.query<{ autovacuum: string }>('SHOW autovacuum')
      if (rows[0].autovacuum === 'on') return undefined
      const everyMs = 5000
      return {
        everyMs,
        label: `vacuum_every_ms=${everyMs} (server autovacuum off)`,
        async run() {
          const tables = await admin.query<{ name: string }>(
            `SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'skein%'`,
            [schema],
          )
          for (const { name } of tables.rows) await admin.query(`VACUUM "${schema}"."${name}"`)
        },
      }
    },
    async sizes() {
      const { rows } = await admin.query<{ name: string; bytes: string }>(
        `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname LIKE 'skein%'`,
        [schema],
      )
      const tables: StoreSizes['tables'] = {}
      let totalBytes = 0
      for (const { name, bytes } of rows) {
        const counted = await admin.query<{ n: string }>(
          `SELECT count(*) AS n FROM "${schema}"."${name}"`,
        )
        tables[name] = { rows: Number(counted.rows[0].n), bytes: Number(bytes) }
        totalBytes += Number(bytes)
      }
      return { tables, totalBytes }
    },
    async drop() {
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await admin.end()
    },
  }
}

/** The tables that held a row at some point of the soak, largest first. */
function busyTables(result: SoakResult): string[] {
  const peak = new Map<string, number>()
  for (const s of result.samples) {
    for (const [name, { rows, bytes }] of Object.entries(s.tables)) {
      if (rows > 0) peak.set(name, Math.max(peak.get(name) ?? 0, bytes))
    }
  }
  return [...peak].sort((a, b) => b[1] - a[1]).map(([name]) => name)
}

/** One `SCORE retention-soak` line per sample and one for the whole soak. */
export function printSoak(result: SoakResult): void {
  const tables = busyTables(result)
  for (const s of result.samples) {
    const perTable = tables
      .map(
        (name) =>
          `${name.replace(/^skein_/, '')}=${s.tables[name]?.rows ?? 0}r/${s.tables[name]?.bytes ?? 0}B`,
      )
      .join(' ')
    console.log(
      `SCORE retention-soak store=${result.label} phase=${s.phase} runs_done=${s.runsDone} total_bytes=${s.totalBytes} ${perTable}`,
    )
  }
  const at = (phase: SoakSample['phase']) => result.samples.find((s) => s.phase === phase)
  const middle = at('middle')
  const end = at('end')
  const rowsOf = (s: SoakSample | undefined) =>
    Object.values(s?.tables ?? {}).reduce((sum, t) => sum + t.rows, 0)
  console.log(
    `SCORE retention-soak store=${result.label} runs=${result.runs} runs_per_s=${Math.round(result.runs / result.seconds)} failures=${result.failures} live_untouched=${result.liveUntouched}/${result.live} live_completed=${result.liveCompleted}/${result.live} deleted=${result.deletedTotal} rows_end_vs_middle=${(rowsOf(end) / rowsOf(middle)).toFixed(2)} bytes_end_vs_middle=${((end?.totalBytes ?? 0) / (middle?.totalBytes ?? 1)).toFixed(2)} runs_rows_drained=${at('drained')?.tables.skein_runs?.rows} upkeep=${result.maintenance}`,
  )
}

async function pgReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

const rowsOf = (result: SoakResult): Row[] => {
  const middle = result.samples.find((s) => s.phase === 'middle')
  const end = result.samples.find((s) => s.phase === 'end')
  return [
    {
      name: `${result.label}: short runs with retention on`,
      value: result.runs / result.seconds,
      unit: 'runs/s',
    },
    {
      name: `${result.label}: store bytes at the end of the load`,
      value: end?.totalBytes ?? 0,
      unit: 'bytes',
      baseline: middle?.totalBytes,
      ratio: (end?.totalBytes ?? 0) / (middle?.totalBytes ?? 1),
      note: 'baseline: at its middle',
    },
  ]
}

export async function benchRetentionSoak(): Promise<Row[]> {
  const options = {
    runs: Number(process.env.SKEIN_BENCH_SOAK_RUNS ?? 20_000),
    live: 50,
    concurrency: 16,
  }
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-soak-'))
  const rows: Row[] = []
  try {
    const sqlite = await soakRetention(sqliteSoakStorage(join(dir, 'runs.db')), options)
    printSoak(sqlite)
    rows.push(...rowsOf(sqlite))
    const url = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
    if (await pgReachable(url)) {
      const storage = postgresSoakStorage(url, `bench_soak_${process.pid}`)
      try {
        const postgres = await soakRetention(storage, options)
        printSoak(postgres)
        rows.push(...rowsOf(postgres))
      } finally {
        await storage.drop()
      }
    } else console.log(`SCORE retention-soak store=postgres skipped: ${url} unreachable`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}
