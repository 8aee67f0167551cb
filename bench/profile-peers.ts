// Profiles the peers bench's CPU-bound Skein workloads on SQLite (a file, synchronous FULL):
// the fan-out/join 1 -> 16 -> 1 and the 10-step chain, written as bench/peers/skein.ts writes
// them, one run at a time. Prints CPU per run and, per run, every SQLite statement call by SQL
// (calls, rows written, time), the spread of COMMIT times and the WAL frames of 20 runs by
// b-tree. Under `node --cpu-prof` the profile covers the warm-up too. PROFILE_WARMUP: warm-up
// runs (1,500); PROFILE_DIR: where the file goes (the system's temporary directory).
//   node --import tsx bench/profile-peers.ts [fan|ten] [runs] [--count]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { createEngine, defineEffect, defineModule } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { chainNodes, fanNodes } from './peers/skein-shapes.js'

const [kind = 'fan', runsArg = '2000'] = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const counting = process.argv.includes('--count')
const runs = Number(runsArg)

const bench = defineModule({
  namespace: 'bench',
  effects: { step: defineEffect({ execute: async (input: { i: number }) => input }) },
})
const nodes = kind === 'fan' ? fanNodes() : chainNodes(10)
const def = defineWorkflow({ name: kind, concurrency: kind === 'fan' ? 16 : undefined, nodes })

interface Tally {
  calls: number
  rows: number
  ms: number
}
const tallies = new Map<string, Tally>()
let counted = false
const connections: Database.Database[] = []
const commits: number[] = []
function countingDriver() {
  function Counting(path: string, options?: Database.Options) {
    const db = new Database(path, options)
    connections.push(db)
    const prepare = db.prepare.bind(db)
    ;(db as any).prepare = (sql: string) => {
      const st = prepare(sql)
      const key = sql
        .replace(/\s+/g, ' ')
        .replace(/(\(\?(, \?)*\)(, )?)+/, '(…)')
        .slice(0, 90)
      for (const method of ['run', 'get', 'all'] as const) {
        const fn = (st as any)[method].bind(st)
        ;(st as any)[method] = (...args: unknown[]) => {
          if (!counted) return fn(...args)
          const t0 = performance.now()
          const out = fn(...args)
          const tally = tallies.get(key) ?? { calls: 0, rows: 0, ms: 0 }
          const took = performance.now() - t0
          tally.ms += took
          if (key === 'COMMIT') commits.push(took)
          tally.calls++
          if (method === 'run') tally.rows += out.changes
          tallies.set(key, tally)
          return out
        }
      }
      return st
    }
    return db
  }
  return Counting as unknown as typeof Database
}

const dir = mkdtempSync(join(process.env.PROFILE_DIR ?? tmpdir(), 'skein-profile-'))
const path = join(dir, 'runs.db')
const store = sqliteStore(counting ? { path, driver: countingDriver as any } : { path })
const engine = createEngine({ store, modules: [workflow({ definitions: [def] }), bench] })
await engine.ready()
const once = async () => {
  const { state } = await engine.start(def)
  if (state.status !== 'completed') throw new Error(`run ended ${state.status}`)
}
for (let i = 0; i < Number(process.env.PROFILE_WARMUP ?? 1500); i++) await once()
counted = counting
const cpu0 = process.cpuUsage()
const t0 = performance.now()
for (let i = 0; i < runs; i++) await once()
const wall = performance.now() - t0
const cpu = process.cpuUsage(cpu0)
const cpuUs = (cpu.user + cpu.system) / runs
console.log(
  JSON.stringify({
    kind,
    runs,
    cpuUsPerRun: Math.round(cpuUs),
    userUs: Math.round(cpu.user / runs),
    systemUs: Math.round(cpu.system / runs),
    wallUs: Math.round((wall / runs) * 1000),
    runsPerS: Math.round((runs / wall) * 1000),
  }),
)
if (counting) {
  const rows = [...tallies].sort((a, b) => b[1].ms - a[1].ms)
  let calls = 0
  let ms = 0
  for (const [sql, t] of rows) {
    calls += t.calls
    ms += t.ms
    console.log(
      `${(t.calls / runs).toFixed(2).padStart(7)} calls ${(t.rows / runs).toFixed(2).padStart(7)} rows ${((t.ms / runs) * 1000).toFixed(1).padStart(7)} us  ${sql}`,
    )
  }
  console.log(
    `total ${(calls / runs).toFixed(2)} calls/run, ${((ms / runs) * 1000).toFixed(1)} us/run in statements`,
  )
  commits.sort((a, b) => a - b)
  const q = (f: number) => (commits[Math.floor(f * (commits.length - 1))] * 1000).toFixed(0)
  const sum = commits.reduce((a, b) => a + b, 0)
  const top = commits.slice(Math.floor(commits.length * 0.99)).reduce((a, b) => a + b, 0)
  console.log(
    `COMMIT us: p10 ${q(0.1)} p50 ${q(0.5)} p90 ${q(0.9)} p99 ${q(0.99)} max ${q(1)}; slowest 1% are ${((top / sum) * 100).toFixed(0)}% of commit time`,
  )
  // WAL frames per commit, by table: the WAL emptied, 20 runs without checkpoints, then each
  // frame's page number (its header's first 4 bytes) mapped to its b-tree by dbstat.
  const main = connections[0]
  main.pragma('wal_autocheckpoint = 0')
  main.pragma('wal_checkpoint(TRUNCATE)')
  counted = false
  for (let i = 0; i < 20; i++) await once()
  const wal = readFileSync(`${path}-wal`)
  const pageSize = wal.readUInt32BE(8)
  const owner = new Map<number, string>()
  for (const { name, pageno } of main.prepare('SELECT name, pageno FROM dbstat').all() as Array<{
    name: string
    pageno: number
  }>)
    owner.set(pageno, name)
  const perTable = new Map<string, number>()
  let frames = 0
  let commitsSeen = 0
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    const page = wal.readUInt32BE(at)
    if (page === 0) break
    frames++
    if (wal.readUInt32BE(at + 4) !== 0) commitsSeen++
    const name = owner.get(page) ?? `page ${page}`
    perTable.set(name, (perTable.get(name) ?? 0) + 1)
  }
  console.log(
    `WAL: ${(frames / 20).toFixed(2)} frames per run, ${(frames / commitsSeen).toFixed(2)} per commit (${commitsSeen / 20} commits per run)`,
  )
  for (const [name, n] of [...perTable].sort((a, b) => b[1] - a[1]))
    console.log(`  ${(n / 20).toFixed(2).padStart(6)} frames per run  ${name}`)
  main.pragma('wal_autocheckpoint = 1000')
  const db = new Database(path, { readonly: true })
  console.log(
    db
      .prepare(
        'SELECT count(*) AS events, avg(length(payload)) AS payload, sum(length(payload)) AS total FROM skein_events',
      )
      .get(),
  )
  console.log(
    db
      .prepare(
        "SELECT type, count(*) n, avg(length(payload)) AS avgPayload, avg(length(id)) idLen, avg(length(thread_id)) thr, avg(length(coalesce(effect_id,''))) eff, avg(length(coalesce(causation_id,''))) caus FROM skein_events GROUP BY type",
      )
      .all(),
  )
  console.log(
    db
      .prepare(
        'SELECT * FROM skein_events WHERE run_no = (SELECT max(run_no) FROM skein_events) ORDER BY seq LIMIT 12',
      )
      .all(),
  )
  console.log(
    db.prepare('SELECT name, sum(pgsize) bytes, sum(ncell) cells FROM dbstat GROUP BY name').all(),
  )
  db.close()
}
await engine.stop()
await store.close()
rmSync(dir, { recursive: true, force: true })
