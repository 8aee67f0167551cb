// `result` across processes (docs/operating-runs.md, "Results"): a second process awaits each
// run's result while this one finishes it, on one shared SQLite file and on one Postgres schema
// (another host). The figure is the time from the run's completion (its updatedAt) to the
// second process's result resolving, p50 and p99 over sequential runs. Both processes read
// the same machine clock.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createEngine, type EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, percentile, type Row } from './table.js'

const PG_URL = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const SCHEMA = `bench_result_${process.pid}`
const RUNS = 60
/** How long the waiter has to subscribe before the run is finished. */
const SETTLE_MS = 30

const waits = defineWorkflow({
  name: 'waits',
  nodes: { go: { run: (ctx) => ctx.waitFor('app.go') } },
})

type Target = { kind: 'sqlite'; path: string } | { kind: 'postgres'; schema: string }

const openStore = (target: Target): EventStore =>
  target.kind === 'sqlite'
    ? sqliteStore({ path: target.path })
    : postgresStore({ connectionString: PG_URL }, { schema: target.schema, maxConnections: 4 })

/** The waiting process: for each run id on stdin, `waiting <id>`, then `resolved <id> <ms>`. */
async function waiter(target: Target): Promise<void> {
  const store = openStore(target)
  const engine = createEngine({ store, modules: [workflow({ definitions: [waits] })] })
  await engine.ready()
  process.stdout.write('ready\n')
  let buffer = ''
  process.stdin.on('data', (chunk) => {
    buffer += chunk
    let cut = buffer.indexOf('\n')
    while (cut >= 0) {
      const runId = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 1)
      cut = buffer.indexOf('\n')
      if (runId === 'exit') {
        void engine
          .stop()
          .then(() => store.close?.())
          .then(() => process.exit(0))
        return
      }
      void engine
        .result(runId)
        .then(() => process.stdout.write(`resolved ${runId} ${Date.now()}\n`))
      process.stdout.write(`waiting ${runId}\n`)
    }
  })
}

function lines(proc: ChildProcess) {
  let buffer = ''
  const queued: string[] = []
  const waiting: Array<{ resolve: (line: string) => void; reject: (error: Error) => void }> = []
  let exited: Error | undefined
  proc.once('exit', (code) => {
    exited = new Error(`waiter exited ${code}`)
    for (const w of waiting.splice(0)) w.reject(exited)
  })
  proc.stdout?.on('data', (chunk) => {
    buffer += chunk
    let cut = buffer.indexOf('\n')
    while (cut >= 0) {
      const line = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 1)
      cut = buffer.indexOf('\n')
      const w = waiting.shift()
      if (w) w.resolve(line)
      else queued.push(line)
    }
  })
  return (): Promise<string> =>
    new Promise((resolve, reject) => {
      const line = queued.shift()
      if (line !== undefined) return resolve(line)
      if (exited) return reject(exited)
      waiting.push({ resolve, reject })
    })
}

/** Latencies (ms) from completion to the other process's resolve, one per run. */
async function measure(target: Target): Promise<number[]> {
  const store = openStore(target)
  const engine = createEngine({ store, modules: [workflow({ definitions: [waits] })] })
  await engine.ready()
  const proc = spawn(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), 'waiter', JSON.stringify(target)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  )
  const next = lines(proc)
  const latencies: number[] = []
  try {
    if ((await next()) !== 'ready') throw new Error('the waiter did not get ready')
    for (let i = 0; i < RUNS; i++) {
      const { runId } = await engine.start(waits)
      proc.stdin?.write(`${runId}\n`)
      if ((await next()) !== `waiting ${runId}`) throw new Error('the waiter lost count')
      await new Promise((r) => setTimeout(r, SETTLE_MS))
      const state = await engine.signal(runId, [{ type: 'app.go', payload: { i } }], {
        wait: 'settled',
      })
      if (state.status !== 'completed') throw new Error(`run ended ${state.status}`)
      const [word, id, at] = (await next()).split(' ')
      if (word !== 'resolved' || id !== runId) throw new Error('the waiter lost count')
      // The first runs warm both processes up.
      if (i >= 5) latencies.push(Number(at) - state.updatedAt)
    }
  } finally {
    proc.stdin?.write('exit\n')
    await new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r)))
    await engine.stop()
    await store.close?.()
  }
  return latencies
}

const rows = (label: string, latencies: number[]): Row[] => [
  {
    name: `${label}: completion to result, p50`,
    value: median(latencies),
    unit: 'ms',
    target: 100,
  },
  { name: `${label}: completion to result, p99`, value: percentile(latencies, 99), unit: 'ms' },
]

async function postgresReachable(): Promise<boolean> {
  const pg = (await import('pg')).default
  const client = new pg.Client({ connectionString: PG_URL })
  try {
    await client.connect()
    await client.end()
    return true
  } catch {
    return false
  }
}

async function dropSchema(): Promise<void> {
  const pg = (await import('pg')).default
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  await client.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`)
  await client.end()
}

export async function benchResultLatency(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-result-'))
  const out: Row[] = []
  try {
    const path = join(dir, 'shared.db')
    out.push(...rows('SQLite, second process on one file', await measure({ kind: 'sqlite', path })))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  if (!(await postgresReachable())) {
    console.log(`skipped Postgres: none reachable at ${PG_URL} (set SKEIN_PG_URL)`)
    return out
  }
  try {
    out.push(...rows('Postgres, another host', await measure({ kind: 'postgres', schema: SCHEMA })))
  } finally {
    await dropSchema()
  }
  return out
}

// Started by measure() as the waiting process.
if (process.argv[2] === 'waiter') await waiter(JSON.parse(process.argv[3]) as Target)
