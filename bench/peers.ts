// `npm run bench:peers` (and the `peers` suite of `npm run bench`): Skein on SQLite and on
// Postgres, DBOS Transact on the same Postgres and Restate, each on the same workloads
// (bench/peers/harness.ts), each in a fresh child process and a fresh store per round, the
// rounds interleaved (the order rotates) so the shared machine's noise hits all of them alike.
// A peer that is not installed (bash bench/peers/install.sh) prints "skipped: not installed";
// Postgres engines are skipped when SKEIN_PG_URL does not answer. `--smoke` (or
// SKEIN_PEER_SMOKE=1): one round of tiny workloads, what CI runs. SKEIN_PEER_ENGINES=a,b picks
// engines (skein-sqlite, skein-postgres, dbos, restate); SKEIN_PEER_WORKLOADS=par runs only the
// 16-in-flight workload (harness.ts `picked`); SKEIN_PEER_RECOVERIES=n repeats the recovery
// (the table shows the median). docs/benchmarks.md has the method.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import pg from 'pg'
import { picked } from './peers/harness.js'
import { median, printRows, type Row } from './table.js'

const PG_URL = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const SMOKE = process.argv.includes('--smoke') || process.env.SKEIN_PEER_SMOKE === '1'
const ROUNDS = SMOKE ? 1 : Number(process.env.SKEIN_PEER_ROUNDS ?? 3)
const RECOVERIES = SMOKE ? 1 : Number(process.env.SKEIN_PEER_RECOVERIES ?? 1)
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

interface Engine {
  key: string
  label: string
  script: string
  postgres: boolean
  installed: () => boolean
  env: Record<string, string>
}

const ENGINES: Engine[] = [
  {
    key: 'skein-sqlite',
    label: 'Skein on SQLite',
    script: here('./peers/skein.ts'),
    postgres: false,
    installed: () => true,
    env: { SKEIN_PEER_STORE: 'sqlite' },
  },
  {
    key: 'skein-postgres',
    label: 'Skein on Postgres',
    script: here('./peers/skein.ts'),
    postgres: true,
    installed: () => true,
    env: { SKEIN_PEER_STORE: 'postgres', SKEIN_PEER_SCHEMA: 'bench_peer_skein' },
  },
  {
    key: 'dbos',
    label: 'DBOS Transact 5.3',
    script: here('./peers/dbos/workloads.ts'),
    postgres: true,
    installed: () => existsSync(here('./peers/dbos/node_modules/@dbos-inc/dbos-sdk/package.json')),
    env: { SKEIN_PEER_SCHEMA: 'bench_peer_dbos', NODE_NO_WARNINGS: '1' },
  },
  {
    key: 'restate',
    label: 'Restate 1.7',
    script: here('./peers/restate/workloads.ts'),
    postgres: false,
    installed: () =>
      existsSync(
        here(
          './peers/restate/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server',
        ),
      ) && existsSync(here('./peers/restate/node_modules/@restatedev/restate-sdk/package.json')),
    env: { RESTATE_LOGGING: 'ERROR' },
  },
]

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

/** Above this, the database's catalog slows every Postgres engine (docs/benchmarks.md). */
const BLOATED_CATALOG_BYTES = 64 * 1024 * 1024

/** Warns when `pg_attribute` is bloated (a test suite's thousands of schemas made and dropped). */
async function warnOfBloatedCatalog(): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    const { rows } = await client.query(
      "SELECT pg_total_relation_size('pg_catalog.pg_attribute')::bigint AS bytes",
    )
    const bytes = Number(rows[0].bytes)
    if (bytes > BLOATED_CATALOG_BYTES) {
      console.log(
        `note: this database's catalog is bloated (pg_attribute ${(bytes / 2 ** 20).toFixed(0)} MB): every Postgres engine runs slower; VACUUM FULL the catalog tables first (docs/benchmarks.md, "A bloated catalog slows Postgres")`,
      )
    }
  } finally {
    await client.end()
  }
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await client.end()
}

/** A fresh store for one child: a new file or directory, or an emptied schema. */
async function freshEnv(engine: Engine, dir: string, n: number, mode: string) {
  if (engine.env.SKEIN_PEER_SCHEMA) await dropSchema(engine.env.SKEIN_PEER_SCHEMA)
  const env: Record<string, string> = {
    ...engine.env,
    SKEIN_PEER_MODE: mode,
    SKEIN_PEER_PATH: join(dir, `${engine.key}-${n}${engine.key === 'restate' ? '' : '.db'}`),
    SKEIN_PG_URL: PG_URL,
  }
  if (SMOKE) env.SKEIN_PEER_SMOKE = '1'
  if (engine.key === 'restate') {
    env.SKEIN_PEER_PORTS = (
      await Promise.all([freePort(), freePort(), freePort(), freePort()])
    ).join(',')
  }
  return env
}

/**
 * Children run the way production code runs: plain Node on JavaScript, each engine's script
 * compiled once per bench (esbuild, the compiler tsx itself uses; the packages it imports stay
 * imports, so Skein is the built package in dist) into a `.built` folder beside it, where its
 * imports resolve as from the source. Through tsx, each child paid ~0.35 s of loader start and
 * on-the-fly compiling before its first line, inside the recovery figure's restart time. When
 * the bench runs Skein's sources (`--conditions=skein-source`, as CI's smoke test does), the
 * children go through tsx as the parent does: dist may not exist there.
 */
const FROM_SOURCE = process.execArgv.some((arg) => arg.includes('skein-source'))
const compiled = new Map<string, Promise<string>>()

function childScript(engine: Engine): Promise<string> {
  if (FROM_SOURCE) return Promise.resolve(engine.script)
  let script = compiled.get(engine.script)
  if (!script) {
    const outfile = join(dirname(engine.script), '.built', basename(engine.script, '.ts') + '.mjs')
    script = import('esbuild')
      .then(({ build }) =>
        build({
          entryPoints: [engine.script],
          outfile,
          bundle: true,
          packages: 'external',
          platform: 'node',
          format: 'esm',
          target: 'node20',
          logLevel: 'warning',
        }),
      )
      .then(() => outfile)
    compiled.set(engine.script, script)
  }
  return script
}

/** The parent's Node flags for a child, without tsx when the child is compiled JavaScript. */
function childArgv(): string[] {
  if (FROM_SOURCE) return process.execArgv
  const argv: string[] = []
  for (let i = 0; i < process.execArgv.length; i++) {
    const arg = process.execArgv[i]
    if (arg === '--import' && process.execArgv[i + 1] === 'tsx') i++
    else if (arg !== '--import=tsx') argv.push(arg)
  }
  return argv
}

async function startChild(engine: Engine, env: Record<string, string>): Promise<ChildProcess> {
  return spawn(process.execPath, [...childArgv(), await childScript(engine)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
}

/** Resolves with the first stdout line starting with `prefix` (its rest, parsed). */
function lineOf(child: ChildProcess, prefix: string, timeoutMs: number): Promise<any> {
  return new Promise((resolve, reject) => {
    let buffered = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`no ${prefix} line within ${timeoutMs} ms`))
    }, timeoutMs)
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk
      for (const line of buffered.split('\n')) {
        if (line.startsWith(`${prefix} `)) {
          clearTimeout(timer)
          resolve(JSON.parse(line.slice(prefix.length + 1)))
        }
      }
      buffered = buffered.slice(buffered.lastIndexOf('\n') + 1)
    })
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`exited ${code} before its ${prefix} line`))
    })
  })
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.on('exit', () => resolve())
  })

async function runChild(engine: Engine, env: Record<string, string>, timeoutMs = 600_000) {
  const child = await startChild(engine, env)
  try {
    return await lineOf(child, 'RESULT', timeoutMs)
  } catch (error) {
    throw new Error(`${engine.label}, ${env.SKEIN_PEER_MODE}: ${(error as Error).message}`)
  } finally {
    await exited(child)
  }
}

/** Workload 6: kill -9 with runs stuck in their first step, restart, time until all complete. */
async function recovery(engine: Engine, dir: string, n: number) {
  const env = await freshEnv(engine, dir, 200 + n, 'stuck')
  const first = await startChild(engine, env)
  const pids: number[] = await lineOf(first, 'READY', 300_000)
  for (const pid of pids) process.kill(pid, 'SIGKILL')
  await exited(first)
  // Until every killed pid is gone or a zombie (a server is not our child: poll it).
  const alive = (pid: number) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
    } catch {
      return false
    }
  }
  for (const pid of pids) {
    while (alive(pid)) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  await childScript(engine) // compiled before the clock starts
  const t0 = performance.now()
  const second = await startChild(engine, { ...env, SKEIN_PEER_MODE: 'recovered' })
  const result = await lineOf(second, 'RESULT', 300_000)
  const wallMs = performance.now() - t0
  await exited(second)
  return { wallMs, ...result }
}

type Figures = Map<string, number[]>
/** Records a round's figure; a skipped workload's (NaN, null once through JSON) is left out. */
const add = (figures: Figures, key: string, value: number | null) => {
  if (value !== null && !Number.isNaN(value)) figures.set(key, [...(figures.get(key) ?? []), value])
}

export async function benchPeers(): Promise<Row[]> {
  const pgUp = await postgresReachable()
  const engines: Engine[] = []
  const only = process.env.SKEIN_PEER_ENGINES?.split(',')
  for (const engine of ENGINES) {
    if (only && !only.includes(engine.key)) continue
    if (!engine.installed())
      console.log(`${engine.label}: skipped: not installed (run bash bench/peers/install.sh)`)
    else if (engine.postgres && !pgUp)
      console.log(`${engine.label}: skipped: no Postgres at ${PG_URL}`)
    else engines.push(engine)
  }
  if (engines.some((e) => e.postgres)) await warnOfBloatedCatalog()
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-peers-'))
  const figures = new Map<string, Figures>(engines.map((e) => [e.key, new Map()]))
  const loads: string[] = [loadavg()]
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order = engines.map((_, i) => engines[(i + round) % engines.length])
      for (const engine of order) {
        const r = await runChild(engine, await freshEnv(engine, dir, round + 1, 'round'))
        const f = figures.get(engine.key)!
        add(f, 'seq runs/s', r.seq.rate)
        add(f, 'seq p50', r.seq.p50)
        add(f, 'seq p99', r.seq.p99)
        add(f, 'par runs/s', r.par.rate)
        add(f, 'par p50', r.par.p50)
        add(f, 'par p99', r.par.p99)
        add(f, 'ten ms/step', r.ten.p50 === null ? null : r.ten.p50 / 10)
        add(f, 'fan runs/s', r.fan.rate)
        add(f, 'fan p50', r.fan.p50)
        add(f, 'signal p50', r.signal.p50)
        add(f, 'signal p99', r.signal.p99)
        add(f, 'cpu ms/run', r.cpuMsPerRun)
        add(f, 'bytes/step', r.bytesPerStep)
        console.log(
          `round ${round + 1} ${engine.label}: ${fmt(r.seq.rate ?? Number.NaN)} / ${fmt(r.par.rate)} runs/s (load ${loadavg()})`,
        )
      }
      loads.push(loadavg())
    }
    for (const engine of engines) {
      const f = figures.get(engine.key)!
      if (picked('sleepers')) {
        const nap = await runChild(engine, await freshEnv(engine, dir, 100, 'sleepers'))
        add(f, 'sleep late p50', nap.p50)
        add(f, 'sleep late p99', nap.p99)
        console.log(
          `${engine.label}: wake lateness p50 ${nap.p50.toFixed(0)} ms (load ${loadavg()})`,
        )
      }
      for (let i = 0; picked('recovery') && i < RECOVERIES; i++) {
        const rec = await recovery(engine, dir, i)
        add(f, 'recovery wall ms', rec.wallMs)
        add(f, 'recovery open ms', rec.fromOpenMs)
        console.log(
          `${engine.label}: recovery ${rec.wallMs.toFixed(0)} ms, ${rec.fromOpenMs.toFixed(0)} from opening the engine (load ${loadavg()})`,
        )
      }
    }
    loads.push(loadavg())
  } finally {
    rmSync(dir, { recursive: true, force: true })
    for (const engine of engines) {
      if (engine.env.SKEIN_PEER_SCHEMA) await dropSchema(engine.env.SKEIN_PEER_SCHEMA)
    }
  }
  printTables(engines, figures, loads)
  return targetRows(figures)
}

const METRICS: Array<[key: string, label: string, higherIsBetter: boolean]> = [
  ['seq runs/s', '1. 3 steps, one at a time: runs/s', true],
  ['seq p50', '1. 3 steps, one at a time: p50 ms', false],
  ['seq p99', '1. 3 steps, one at a time: p99 ms', false],
  ['par runs/s', '1. 3 steps, 16 in flight: runs/s', true],
  ['par p50', '1. 3 steps, 16 in flight: p50 ms', false],
  ['par p99', '1. 3 steps, 16 in flight: p99 ms', false],
  ['ten ms/step', '2. 10-step chain: ms per step (p50 / 10)', false],
  ['fan runs/s', '3. fan-out/join 1→16→1: runs/s', true],
  ['fan p50', '3. fan-out/join 1→16→1: p50 ms', false],
  ['signal p50', '4. signal round trip: p50 ms', false],
  ['signal p99', '4. signal round trip: p99 ms', false],
  ['sleep late p50', '5. 1,000 runs sleeping 1 s: wake lateness p50 ms', false],
  ['sleep late p99', '5. 1,000 runs sleeping 1 s: wake lateness p99 ms', false],
  ['recovery wall ms', '6. recovery of 1,000 in-flight runs: restart → all complete, ms', false],
  ['recovery open ms', '6. the same, from opening the engine, ms', false],
  ['cpu ms/run', '7. CPU per run, 16 in flight (host + server + database backends), ms', false],
  ['bytes/step', '7. store bytes per step', false],
]

const fmt = (n: number | undefined) =>
  n === undefined || Number.isNaN(n)
    ? '—'
    : n >= 100
      ? Math.round(n).toLocaleString('en')
      : n >= 10
        ? n.toFixed(1)
        : n.toFixed(2)

function printTables(engines: Engine[], figures: Map<string, Figures>, loads: string[]) {
  const m = (engine: string, key: string) => {
    const values = figures.get(engine)?.get(key)
    return values ? median(values) : undefined
  }
  console.log(
    `\n### Absolute figures (medians of ${ROUNDS} round(s); load average ${loads.join(' → ')})`,
  )
  console.log(`| workload | ${engines.map((e) => e.label).join(' | ')} |`)
  console.log(`|---|${engines.map(() => '---').join('|')}|`)
  for (const [key, label] of METRICS) {
    console.log(`| ${label} | ${engines.map((e) => fmt(m(e.key, key))).join(' | ')} |`)
  }
  const skeins = engines.filter((e) => e.key.startsWith('skein'))
  const peers = engines.filter((e) => !e.key.startsWith('skein'))
  if (peers.length === 0) return
  console.log('\n### Skein / peer (above 1: Skein better; latencies are peer ÷ Skein)')
  const pairs = skeins.flatMap((s) => peers.map((p) => [s, p] as const))
  console.log(`| workload | ${pairs.map(([s, p]) => `${s.label} / ${p.label}`).join(' | ')} |`)
  console.log(`|---|${pairs.map(() => '---').join('|')}|`)
  for (const [key, label, higher] of METRICS) {
    const cells = pairs.map(([s, p]) => {
      const a = m(s.key, key)
      const b = m(p.key, key)
      if (a === undefined || b === undefined) return '—'
      return `${(higher ? a / b : b / a).toFixed(2)}×`
    })
    console.log(`| ${label} | ${cells.join(' | ')} |`)
  }
}

/** The issue's targets as rows (ratio against the target's peer; target the multiple). */
function targetRows(figures: Map<string, Figures>): Row[] {
  const m = (engine: string, key: string) => {
    const values = figures.get(engine)?.get(key)
    return values ? median(values) : undefined
  }
  const rows: Row[] = []
  const vs = (skein: string, peer: string, key: string, target: number, higher: boolean) => {
    const a = m(skein, key)
    const b = m(peer, key)
    if (a === undefined || b === undefined) return
    rows.push({
      name: `${skein} vs ${peer}: ${key}`,
      value: a,
      unit: key.includes('runs/s') ? 'runs/s' : 'ms',
      baseline: b,
      ratio: higher ? a / b : b / a,
      target,
      note: higher ? undefined : 'ratio = peer ÷ Skein',
    })
  }
  for (const peer of ['restate', 'dbos']) {
    for (const key of [
      'seq runs/s',
      'par runs/s',
      'seq p50',
      'ten ms/step',
      'fan runs/s',
      'signal p50',
    ]) {
      vs('skein-sqlite', peer, key, 5, key.includes('runs/s'))
    }
    vs('skein-postgres', peer, 'par runs/s', peer === 'restate' ? 2.5 : 5, true)
  }
  const rec = m('skein-sqlite', 'recovery wall ms')
  if (rec !== undefined) {
    rows.push({
      name: 'skein-sqlite: recovery of in-flight runs, restart → all complete',
      value: rec,
      unit: 'ms',
      target: 2000,
      note: `from opening the engine ${fmt(m('skein-sqlite', 'recovery open ms'))} ms`,
    })
  }
  return rows
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(`# Skein vs peers — ${new Date().toISOString()} — node ${process.version}`)
  printRows('peers: targets', await benchPeers())
}
