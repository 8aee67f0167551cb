// Flow control (docs/flow-control.md): what a concurrency limit costs a 3-step workflow at 16
// concurrent starts against the same workflow without flow control, on a SQLite file and on
// Postgres; what it adds to an unloaded start (one at a time, a slot always free); how fast a
// backlog of 10,000 queued runs over 100 keys is admitted as slots free; and DBOS Transact's
// queue (bench/peers/dbos/queue.ts) with the same limit on the same Postgres. Every figure is
// a median over rounds that interleave the sides (the order alternates), each side on a fresh
// store; the load average is printed before and after every round.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { createEngine, defineEffect, defineModule, type Engine, type EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, type WorkflowDefinition, workflow } from 'skein/workflow'
import { Counter } from './peers/harness.js'
import { median, percentile, type Row } from './table.js'

const PG_URL = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const ROUNDS = Number(process.env.SKEIN_FLOW_ROUNDS ?? 3)
const WIDTH = 16
const PAR_RUNS = 800
const SEQ_RUNS = 200
const BACKLOG = 10_000
const BACKLOG_KEYS = 100
/** Slots per key of the backlog: its 100 keys admit 200 runs at once. */
const BACKLOG_LIMIT = 2
/** DBOS's queue polls (1 s by default): fewer runs keep its round within a minute. */
const DBOS_RUNS = 160
const SCHEMA = 'bench_flow'
/** SKEIN_FLOW_PARTS=limit,backlog,dbos picks parts (default: all). */
const PARTS = (process.env.SKEIN_FLOW_PARTS ?? 'limit,backlog,dbos').split(',')

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

const counted = new Counter()
const bench = defineModule({
  namespace: 'bench',
  effects: {
    step: defineEffect({ execute: async (input: { i: number }) => input }),
    count: defineEffect({
      execute: async () => {
        counted.add()
        return null
      },
    }),
  },
})
const threeNodes = {
  s0: { run: (ctx: any) => ctx.invoke('bench.step', { i: 0 }) },
  s1: { after: ['s0'] as const, run: (ctx: any) => ctx.invoke('bench.step', { i: 1 }) },
  s2: { after: ['s1'] as const, run: (ctx: any) => ctx.invoke('bench.step', { i: 2 }) },
}
const plain = defineWorkflow({ name: 'three', nodes: threeNodes })
const limited = defineWorkflow({
  name: 'three-limited',
  flow: { concurrency: { limit: WIDTH } },
  nodes: threeNodes,
})
type BacklogInput = { k: string; hold: boolean }
/** The backlog: 2 slots per key; a `hold` run keeps its slot until signalled. */
const backlog = defineWorkflow({
  name: 'backlog',
  flow: { concurrency: { limit: BACKLOG_LIMIT, key: (input: BacklogInput) => input.k } },
  nodes: {
    go: {
      run: (ctx: any) =>
        (ctx.input as BacklogInput).hold ? ctx.waitFor('app.go') : ctx.invoke('bench.count', {}),
    },
  },
})

type StoreKind = 'sqlite' | 'postgres'

async function dropSchema(): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  await client.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`)
  await client.end()
}

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

let files = 0
/** An engine with `definitions` on a fresh store of `kind`; `close` removes the store. */
async function freshEngine(kind: StoreKind, dir: string, definitions: WorkflowDefinition[]) {
  let store: EventStore
  if (kind === 'sqlite') store = sqliteStore({ path: join(dir, `flow-${files++}.db`) })
  else {
    await dropSchema()
    store = postgresStore({ connectionString: PG_URL }, { schema: SCHEMA })
  }
  const engine = createEngine({ store, modules: [workflow({ definitions }), bench] })
  await engine.ready()
  const close = async () => {
    await engine.stop()
    await store.close?.()
    if (kind === 'postgres') await dropSchema()
  }
  return { engine, close }
}

/** `runs` starts of `def`, `width` at a time, each resolved once completed: runs/s, latencies. */
async function timedStarts(engine: Engine, def: WorkflowDefinition, runs: number, width: number) {
  let next = 0
  const times: number[] = []
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < runs) {
        next++
        const started = performance.now()
        const { state } = await engine.start(def)
        times.push(performance.now() - started)
        if (state.status !== 'completed') throw new Error(`${def.name} ended ${state.status}`)
      }
    }),
  )
  return { rate: runs / ((performance.now() - t0) / 1000), times }
}

/** One side of the limit comparison: 16 concurrent (runs/s), then one at a time (latencies). */
async function threeSteps(kind: StoreKind, dir: string, def: WorkflowDefinition) {
  const { engine, close } = await freshEngine(kind, dir, [def])
  try {
    await timedStarts(engine, def, 100, WIDTH) // warm-up: JIT, pools, statements
    const par = await timedStarts(engine, def, PAR_RUNS, WIDTH)
    const seq = await timedStarts(engine, def, SEQ_RUNS, 1)
    return { rate: par.rate, seq: seq.times }
  } finally {
    await close()
  }
}

/**
 * 10,000 runs queued over 100 keys behind 200 runs holding every slot; the holders are
 * signalled, and the backlog drains as slots free: admissions per second, from the signals
 * until the last run completed (each run's work is one in-process step).
 */
async function drainBacklog(kind: StoreKind, dir: string) {
  const { engine, close } = await freshEngine(kind, dir, [backlog])
  try {
    const keys = Array.from({ length: BACKLOG_KEYS }, (_, i) => `k${i}`)
    const holders: string[] = []
    for (const k of keys) {
      for (let i = 0; i < BACKLOG_LIMIT; i++) {
        holders.push((await engine.start(backlog, { k, hold: true })).runId)
      }
    }
    const queueing = performance.now()
    let next = 0
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < BACKLOG) {
          const k = keys[next++ % BACKLOG_KEYS]
          const { state } = await engine.start(backlog, { k, hold: false })
          if (state.status !== 'queued') throw new Error(`a backlog start was ${state.status}`)
        }
      }),
    )
    const queuedPerSecond = BACKLOG / ((performance.now() - queueing) / 1000)
    const done = counted.count + BACKLOG
    const t0 = performance.now()
    await Promise.all(holders.map((runId) => engine.signal(runId, [{ type: 'app.go' }])))
    await counted.reached(done)
    return { admitted: BACKLOG / ((performance.now() - t0) / 1000), queuedPerSecond }
  } finally {
    await close()
  }
}

const DBOS_DIR = new URL('./peers/dbos/', import.meta.url)
const dbosInstalled = () =>
  existsSync(new URL('node_modules/@dbos-inc/dbos-sdk/package.json', DBOS_DIR))

/** DBOS's queue, limit 16, 16 callers, in a child process: runs/s. */
function dbosQueue(pollMs: number): { rate: number; p50: number } {
  const script = fileURLToPath(new URL('queue.ts', DBOS_DIR))
  const args = [PG_URL, 'bench_flow_dbos', String(DBOS_RUNS), String(WIDTH), String(WIDTH)]
  const child = spawnSync(process.execPath, ['--import', 'tsx', script, ...args, String(pollMs)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
  })
  if (child.status !== 0) throw new Error(`the DBOS queue peer failed with exit ${child.status}`)
  return JSON.parse(child.stdout.trim().split('\n').at(-1)!)
}

async function dropDbosSchema(): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  await client.query('DROP SCHEMA IF EXISTS "bench_flow_dbos" CASCADE')
  await client.end()
}

type Figures = Map<string, number[]>
const add = (f: Figures, key: string, value: number) => f.set(key, [...(f.get(key) ?? []), value])

export async function benchFlow(): Promise<Row[]> {
  const kinds: StoreKind[] = ['sqlite']
  if (await postgresReachable()) kinds.push('postgres')
  else console.log(`postgres: skipped: no Postgres reachable at ${PG_URL} (set SKEIN_PG_URL)`)
  const peer = PARTS.includes('dbos') && kinds.includes('postgres') && dbosInstalled()
  if (!peer) console.log('DBOS queue: skipped (bash bench/peers/install.sh, and Postgres)')
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-flow-'))
  const f: Figures = new Map()
  const loads = [loadavg()]
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of kinds) {
        const sides = !PARTS.includes('limit')
          ? []
          : round % 2
            ? [limited, plain]
            : [plain, limited]
        for (const def of sides) {
          const side = def === plain ? 'plain' : 'limited'
          const r = await threeSteps(kind, dir, def)
          add(f, `${kind} ${side} par`, r.rate)
          console.log(
            `round ${round + 1} ${kind} ${side}: ${r.rate.toFixed(0)} runs/s (load ${loadavg()})`,
          )
          add(f, `${kind} ${side} seq p50`, median(r.seq))
          add(f, `${kind} ${side} seq p99`, percentile(r.seq, 99))
        }
        if (!PARTS.includes('backlog')) continue
        const b = await drainBacklog(kind, dir)
        add(f, `${kind} backlog admitted`, b.admitted)
        add(f, `${kind} backlog queued`, b.queuedPerSecond)
      }
      if (peer) {
        await dropDbosSchema()
        add(f, 'dbos default', dbosQueue(0).rate)
        await dropDbosSchema()
        add(f, 'dbos 10ms', dbosQueue(10).rate)
      }
      loads.push(loadavg())
      console.log(`round ${round + 1} of ${ROUNDS} done (load ${loads.at(-1)})`)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
    if (kinds.includes('postgres')) await dropSchema()
    if (peer) await dropDbosSchema()
  }
  console.log(`load average (1, 5, 15 min) before and after each round: ${loads.join(' → ')}`)
  return rowsOf(f, kinds, peer)
}

function rowsOf(f: Figures, kinds: StoreKind[], peer: boolean): Row[] {
  const m = (key: string) => median(f.get(key) ?? [Number.NaN])
  const rows: Row[] = []
  for (const kind of kinds) {
    const store = kind === 'sqlite' ? 'SQLite' : 'Postgres'
    // Only the parts measured (SKEIN_FLOW_PARTS): a skipped part prints no row.
    if (f.has(`${kind} limited par`)) rows.push(...limitRows(f, kind, store))
    if (!f.has(`${kind} backlog admitted`)) continue
    rows.push({
      name: `${store}: backlog of ${BACKLOG.toLocaleString('en')} queued runs over ${BACKLOG_KEYS} keys (limit ${BACKLOG_LIMIT} per key), admitted as slots free`,
      value: m(`${kind} backlog admitted`),
      unit: 'runs/s',
      note: `queued at ${Math.round(m(`${kind} backlog queued`))} starts/s, 50 at a time`,
    })
  }
  if (peer) {
    for (const [key, label] of [
      ['dbos default', 'DBOS queue (default 1 s polling)'],
      ['dbos 10ms', 'DBOS queue (minPollingIntervalMs 10)'],
    ] as const) {
      if (!f.has(key) || !f.has('postgres limited par')) continue
      rows.push({
        name: `Postgres: Skein concurrency limit 16 vs ${label}, limit 16, 16 concurrent`,
        value: m('postgres limited par'),
        unit: 'runs/s',
        baseline: m(key),
        ratio: m('postgres limited par') / m(key),
        target: 2,
        note: `DBOS ${DBOS_RUNS} runs per round`,
      })
    }
  }
  return rows
}

/** The limit comparison's rows of one store: runs/s at 16 concurrent, then the unloaded start. */
function limitRows(f: Figures, kind: StoreKind, store: string): Row[] {
  const m = (key: string) => median(f.get(key) ?? [Number.NaN])
  const rows: Row[] = []
  // Each round measures both sides back to back: the ratio is the median of the rounds'
  // ratios, which a load average swinging between rounds moves less than a ratio of medians.
  const limitedRuns = f.get(`${kind} limited par`) ?? []
  const ratios = limitedRuns.map((v, i) => v / (f.get(`${kind} plain par`) ?? [])[i])
  rows.push({
    name: `${store}: 3-step workflow, concurrency limit 16, 16 concurrent, vs no flow control`,
    value: m(`${kind} limited par`),
    unit: 'runs/s',
    baseline: m(`${kind} plain par`),
    ratio: median(ratios),
    target: 0.8,
    note: `ratio: median of the rounds' ratios, ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`,
  })
  for (const p of ['p50', 'p99']) {
    const added = m(`${kind} limited seq ${p}`) - m(`${kind} plain seq ${p}`)
    rows.push({
      name: `${store}: queue wait added to an unloaded start, ${p} (limited − plain, one at a time)`,
      value: added,
      unit: 'ms',
      baseline: m(`${kind} plain seq ${p}`),
      ...(p === 'p50' && kind === 'sqlite' ? { target: 2 } : {}),
      note: `baseline: the plain start's ${p}`,
    })
  }
  return rows
}
