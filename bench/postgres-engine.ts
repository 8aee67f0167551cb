// Skein's 3-step workflow on the Postgres store against (a) a raw-driver loop writing the same
// events with the same schema and commit grouping (postgres-floor.ts), through `pg` and through
// postgres.js, and (c) the peer, DBOS Transact, running the same workflow on the same database
// (bench/peers/dbos, installed by bench/peers/install.sh). Every figure is a median over
// interleaved rounds of one run; the database is SKEIN_PG_URL (default: the local server).
// CPU per run is this process's and, on a local server, the one backend's that served it (each
// side has a one-connection client; /proc, 10 ms ticks).
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createEngine } from 'skein'
import { type PostgresQueryable, postgresStore } from 'skein/postgres'
import { workflow } from 'skein/workflow'
import type { FloorRows } from './floor-rows.js'
import { processCpuMs } from './peers/harness.js'
import { floorRuns, freshSchema, type RawDriver, rawClient } from './postgres-floor.js'
import { median, printRows, type Row } from './table.js'
import { benchEffects, three } from './three-steps.js'

const PG_URL = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const CONCURRENCY = 16
// Schemas of this run only: two runs of this bench on one database (other sessions' included)
// would otherwise drop each other's schemas mid-round.
const SCHEMAS = {
  skein: `bench_skein_${process.pid}`,
  floor: `bench_floor_${process.pid}`,
  dbos: `bench_dbos_${process.pid}`,
}
const ROUNDS = 5
const SEQ_RUNS = 300
const PAR_RUNS = 1600
const DRIVERS: RawDriver[] = ['pg', 'postgres']

/** The backend serving a one-connection client (its CPU is read from /proc: a local server). */
async function backendPid(client: PostgresQueryable): Promise<number> {
  const { rows } = await client.query('SELECT pg_backend_pid() AS pid', [])
  return Number(rows[0].pid)
}

/** `runs` 3-step runs on a fresh schema, `concurrency` at a time, through `driver`. */
async function skeinRuns(driver: RawDriver, runs: number, concurrency: number) {
  const client = rawClient(driver, PG_URL)
  await freshSchema(client, SCHEMAS.skein)
  let groups = 0
  const counting: PostgresQueryable = {
    query(text, params) {
      if (text.startsWith('SELECT o_req') || text.startsWith('WITH run AS')) groups++
      return client.query(text, params)
    },
  }
  const store = postgresStore({ pool: counting }, { schema: SCHEMAS.skein })
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [three] }), benchEffects],
  })
  await engine.ready()
  groups = 0
  let next = 0
  const times: number[] = []
  const pid = await backendPid(client)
  const backend0 = processCpuMs([pid])
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < runs) {
        next++
        const started = performance.now()
        const { state } = await engine.start(three)
        times.push(performance.now() - started)
        if (state.status !== 'completed') throw new Error(`3-step run ended ${state.status}`)
      }
    }),
  )
  const rate = runs / ((performance.now() - t0) / 1000)
  const cpu = process.cpuUsage(cpu0)
  const backendMs = (processCpuMs([pid]) - backend0) / runs
  await engine.stop()
  await store.close()
  await client.end()
  const cpuMs = (cpu.user + cpu.system) / 1000 / runs
  return { rate, times, groupsPerRun: groups / runs, cpuMs, backendMs }
}

/** The raw loop's runs/s, and this process's and its backend's CPU ms per run. */
async function floor(
  driver: RawDriver,
  runs: number,
  concurrency: number,
  rows: FloorRows = 'small',
): Promise<{ rate: number; cpuMs: number; backendMs: number }> {
  const client = rawClient(driver, PG_URL)
  try {
    await freshSchema(client, SCHEMAS.floor)
    const pid = await backendPid(client)
    const backend0 = processCpuMs([pid])
    const cpu0 = process.cpuUsage()
    const rate = await floorRuns(client, SCHEMAS.floor, runs, concurrency, rows)
    const cpu = process.cpuUsage(cpu0)
    const backendMs = (processCpuMs([pid]) - backend0) / runs
    return { rate, cpuMs: (cpu.user + cpu.system) / 1000 / runs, backendMs }
  } finally {
    await client.end()
  }
}

const DBOS_DIR = new URL('./peers/dbos/', import.meta.url)

const dbosInstalled = () =>
  existsSync(new URL('node_modules/@dbos-inc/dbos-sdk/package.json', DBOS_DIR))

/** One round of DBOS in a child process (a process-wide singleton): runs/s and p50 ms. */
function dbosRound(): { seq: number; par: number; p50: number } {
  const script = fileURLToPath(new URL('three-steps.ts', DBOS_DIR))
  const args = [PG_URL, SCHEMAS.dbos, '1', String(SEQ_RUNS), String(PAR_RUNS), String(CONCURRENCY)]
  // NODE_NO_WARNINGS: DBOS's own use of pg prints a deprecation warning that is not ours.
  const child = spawnSync(process.execPath, ['--import', 'tsx', script, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
  })
  if (child.status !== 0) throw new Error(`DBOS peer failed with exit ${child.status}`)
  const { seq, par, p50 } = JSON.parse(child.stdout.trim().split('\n').at(-1)!)
  return { seq: seq[0], par: par[0], p50 }
}

async function reachable(): Promise<boolean> {
  const client = rawClient('pg', PG_URL)
  try {
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

const spread = (values: number[], baseline: number[]) => {
  const ratios = values.map((v, i) => v / baseline[i])
  return `per-round ratios ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`
}

async function dropSchemas(): Promise<void> {
  const client = rawClient('pg', PG_URL)
  for (const schema of Object.values(SCHEMAS)) {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  }
  await client.end()
}

export async function benchPostgresEngine(): Promise<Row[]> {
  if (!(await reachable())) {
    console.log(`skipped: no Postgres reachable at ${PG_URL} (set SKEIN_PG_URL)`)
    return []
  }
  await dropSchemas()
  try {
    return await measure()
  } finally {
    await dropSchemas()
  }
}

async function measure(): Promise<Row[]> {
  // Warm-up (JIT, plan caches) on every side, then rounds that interleave the floor and
  // Skein, so a noisy stretch of the shared machine hits both.
  for (const driver of DRIVERS) {
    await floor(driver, 300, CONCURRENCY)
    await skeinRuns(driver, 600, CONCURRENCY)
  }
  const figures = new Map<string, number[]>()
  const add = (key: string, value: number) => figures.set(key, [...(figures.get(key) ?? []), value])
  const groups = { seq: 0, par: 0 }
  const peer = dbosInstalled()
  for (let round = 0; round < ROUNDS; round++) {
    for (const driver of DRIVERS) {
      add(`floor ${driver} seq`, (await floor(driver, SEQ_RUNS, 1)).rate)
      const seq = await skeinRuns(driver, SEQ_RUNS, 1)
      add(`skein ${driver} seq`, seq.rate)
      const floorPar = await floor(driver, PAR_RUNS, CONCURRENCY)
      add(`floor ${driver} par`, floorPar.rate)
      add(`floor ${driver} cpu`, floorPar.cpuMs)
      add(`floor ${driver} backend`, floorPar.backendMs)
      const par = await skeinRuns(driver, PAR_RUNS, CONCURRENCY)
      add(`skein ${driver} par`, par.rate)
      add(`skein ${driver} cpu`, par.cpuMs)
      add(`skein ${driver} backend`, par.backendMs)
      if (driver === 'pg') {
        // The same loop writing rows the size of Skein's (postgres-floor.ts, FloorRows).
        const sized = await floor(driver, PAR_RUNS, CONCURRENCY, 'skein')
        add('floor sized par', sized.rate)
        add('floor sized backend', sized.backendMs)
        add('skein p50', median(seq.times))
        groups.seq = seq.groupsPerRun
        groups.par = par.groupsPerRun
      }
    }
    // The peer in the same rounds, so it meets the same stretch of the machine.
    if (peer) {
      const dbos = dbosRound()
      add('dbos seq', dbos.seq)
      add('dbos par', dbos.par)
      add('dbos p50', dbos.p50)
    }
  }
  const m = (key: string) => median(figures.get(key)!)
  const rows: Row[] = []
  for (const [label, mode] of [
    ['sequential', 'seq'],
    [`${CONCURRENCY} concurrent`, 'par'],
  ] as const) {
    rows.push({
      name: `raw loop, 3-step workflow's events, ${label}: postgres.js vs pg`,
      value: m(`floor postgres ${mode}`),
      unit: 'runs/s',
      baseline: m(`floor pg ${mode}`),
      ratio: m(`floor postgres ${mode}`) / m(`floor pg ${mode}`),
      note: `baseline: pg; ${spread(figures.get(`floor postgres ${mode}`)!, figures.get(`floor pg ${mode}`)!)}`,
    })
    for (const driver of DRIVERS) {
      rows.push({
        name: `3-step workflow on postgresStore (${driver}), ${label}`,
        value: m(`skein ${driver} ${mode}`),
        unit: 'runs/s',
        baseline: m(`floor ${driver} ${mode}`),
        ratio: m(`skein ${driver} ${mode}`) / m(`floor ${driver} ${mode}`),
        target: 0.5,
        note: `vs the raw ${driver} loop, same schema and grouping; ${spread(figures.get(`skein ${driver} ${mode}`)!, figures.get(`floor ${driver} ${mode}`)!)}`,
      })
    }
  }
  for (const driver of DRIVERS) {
    rows.push({
      name: `CPU per run, ${CONCURRENCY} concurrent, postgresStore (${driver}), this process`,
      value: m(`skein ${driver} cpu`),
      unit: 'ms',
      baseline: m(`floor ${driver} cpu`),
      ratio: m(`skein ${driver} cpu`) / m(`floor ${driver} cpu`),
      note: `baseline: the raw ${driver} loop's; the Postgres backend's CPU is the next row`,
    })
    rows.push({
      name: `CPU per run, ${CONCURRENCY} concurrent, postgresStore (${driver}), its Postgres backend`,
      value: m(`skein ${driver} backend`),
      unit: 'ms',
      baseline: m(`floor ${driver} backend`),
      ratio: m(`skein ${driver} backend`) / m(`floor ${driver} backend`),
      note: `baseline: the raw ${driver} loop's backend; /proc of the local server, 10 ms ticks`,
    })
  }
  rows.push({
    name: `raw pg loop, ${CONCURRENCY} concurrent, rows the size of Skein's (ids, thread and effect ids, payloads, run meta)`,
    value: m('floor sized par'),
    unit: 'runs/s',
    baseline: m('floor pg par'),
    ratio: m('floor sized par') / m('floor pg par'),
    note: `baseline: the raw pg loop; its backend ${m('floor sized backend').toFixed(3)} ms per run against ${m('floor pg backend').toFixed(3)}; Skein on pg at ${(m('skein pg par') / m('floor sized par')).toFixed(2)} of it (${spread(figures.get('skein pg par')!, figures.get('floor sized par')!)})`,
  })
  rows.push({
    name: 'commits (append statements) per run, sequential / 16 concurrent',
    value: groups.seq,
    unit: 'calls',
    note: `${groups.par.toFixed(3)} per run at ${CONCURRENCY} concurrent`,
  })
  if (!peer) {
    rows.push({
      name: 'peer DBOS Transact: skipped: not installed (run bench/peers/install.sh)',
      value: Number.NaN,
      unit: '',
    })
    return rows
  }
  const vsDbos = (key: string) =>
    spread(figures.get(key)!, figures.get(key.replace('skein pg', 'dbos'))!)
  rows.push({
    name: `3-step workflow, ${CONCURRENCY} concurrent: Skein (pg) vs DBOS Transact 5.3`,
    value: m('skein pg par'),
    unit: 'runs/s',
    baseline: m('dbos par'),
    ratio: m('skein pg par') / m('dbos par'),
    target: 2.5,
    note: `DBOS on the same database, its own schema, in the same rounds; ${vsDbos('skein pg par')}`,
  })
  rows.push({
    name: '3-step workflow, sequential: Skein (pg) vs DBOS Transact 5.3',
    value: m('skein pg seq'),
    unit: 'runs/s',
    baseline: m('dbos seq'),
    ratio: m('skein pg seq') / m('dbos seq'),
    note: vsDbos('skein pg seq'),
  })
  rows.push({
    name: '3-step workflow start→complete p50, sequential: Skein (pg) vs DBOS',
    value: m('skein p50'),
    unit: 'ms',
    baseline: m('dbos p50'),
    ratio: m('skein p50') / m('dbos p50'),
    target: 1,
    note: `ratio ≤ target; medians of each round's p50; ${spread(figures.get('skein p50')!, figures.get('dbos p50')!)}`,
  })
  return rows
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printRows('engine on postgres', await benchPostgresEngine())
}
