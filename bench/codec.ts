// Payloads encrypted at rest (docs/data-lifecycle.md): the 3-step workflow with the AES-GCM
// codec against the same workflow without it, on SQLite and on Postgres (when SKEIN_PG_URL or
// the local server answers), in interleaved rounds of one run, each on a fresh store. The figure
// is runs per second, the ratio codec / plain (target ≥ 0.85). SKEIN_BENCH_CODEC_FLOOR=1 also
// runs an identity codec in the same rounds (the codec store's batching with nothing sealed), so
// the line splits the codec's CPU per run into the batching and the rest: the stored form and the
// seals (docs/benchmarks.md, "Payload codec on SQLite: where the floor is").
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import {
  aesGcmCodec,
  createEngine,
  defineEffect,
  defineModule,
  type EventStore,
  type Json,
  type PayloadCodec,
} from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, type Row } from './table.js'

const PG_URL = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const RUNS = Number(process.env.SKEIN_BENCH_CODEC_RUNS ?? 800)
const ROUNDS = Number(process.env.SKEIN_BENCH_CODEC_ROUNDS ?? 5)
const CONCURRENCY = 16
/** The stores to measure (default both): `sqlite`, `postgres` or `sqlite,postgres`. */
const STORES = (process.env.SKEIN_BENCH_CODEC_STORES ?? 'sqlite,postgres').split(',')
const FLOOR = process.env.SKEIN_BENCH_CODEC_FLOOR === '1'

const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })
/**
 * The floor's reference: the codec store's batching (one `encode` per append, pointers on the
 * other events) with the payloads kept in clear as `{ $clear: [...] }`, so reads still decode.
 */
const identity: PayloadCodec = {
  encode: (value) => ({ $clear: value }),
  decode: (stored) =>
    typeof stored === 'object' && stored !== null && !Array.isArray(stored) && '$clear' in stored
      ? (stored.$clear as Json)
      : stored,
  encoded: (stored) =>
    typeof stored === 'object' && stored !== null && !Array.isArray(stored) && '$clear' in stored,
}
type Mode = 'plain' | 'codec' | 'identity'
const benchEffects = defineModule({
  namespace: 'bench',
  effects: {
    // A result of a realistic size: a customer record of a few hundred bytes.
    step: defineEffect<{ i: number; customer: string }, { i: number; note: string }>({
      execute: async ({ i, customer }) => ({ i, note: `${customer} `.repeat(8) }),
    }),
  },
})
const three = defineWorkflow({
  name: 'three',
  nodes: {
    s0: { run: (ctx) => ctx.invoke('bench.step', { i: 0, customer: 'ada@example.com' }) },
    s1: { after: ['s0'], run: (ctx) => ctx.invoke('bench.step', { i: 1, customer: 'ada' }) },
    s2: { after: ['s1'], run: (ctx) => ctx.invoke('bench.step', { i: 2, customer: 'ada' }) },
  },
})

/**
 * Runs per second of `RUNS` 3-step runs, `CONCURRENCY` at a time, and the process's CPU time per
 * run (steadier than the rate on a shared machine).
 */
async function rate(
  store: EventStore,
  mode: Mode,
): Promise<{ perSecond: number; cpuMicros: number }> {
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [three] }), benchEffects],
    codec: mode === 'codec' ? codec : mode === 'identity' ? identity : undefined,
  })
  await engine.ready()
  let next = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < RUNS) {
        next++
        const { state } = await engine.start(three, { order: next }, { wait: 'settled' })
        if (state.status !== 'completed') throw new Error(`run ended ${state.status}`)
      }
    }),
  )
  const perSecond = RUNS / ((performance.now() - t0) / 1000)
  const cpu = process.cpuUsage(cpu0)
  await engine.stop()
  return { perSecond, cpuMicros: (cpu.user + cpu.system) / RUNS }
}

async function pgReachable(): Promise<boolean> {
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

interface Target {
  label: string
  /** A fresh store for one measurement, and how to throw it away. */
  open(n: number): Promise<{ store: EventStore; drop(): Promise<void> }>
}

const sqliteTarget = (dir: string): Target => ({
  label: 'sqlite',
  async open(n) {
    const store = sqliteStore({ path: join(dir, `codec-${n}.db`) })
    return { store, drop: async () => {} }
  },
})

const postgresTarget = (admin: pg.Pool): Target => ({
  label: 'postgres',
  async open(n) {
    const schema = `bench_codec_${process.pid}_${n}`
    const store = postgresStore({ connectionString: PG_URL }, { schema })
    return {
      store,
      drop: async () => {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      },
    }
  },
})

async function measure(target: Target): Promise<Row[]> {
  const plain: number[] = []
  const coded: number[] = []
  const plainCpu: number[] = []
  const codedCpu: number[] = []
  const identityCpu: number[] = []
  const modes: Mode[] = FLOOR ? ['plain', 'identity', 'codec'] : ['plain', 'codec']
  let n = 0
  const loadBefore = loadavg()[0]
  // Interleaved, alternating which goes first: drift of a shared machine hits both alike.
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 ? [...modes].reverse() : modes) {
      const { store, drop } = await target.open(n++)
      try {
        const { perSecond, cpuMicros } = await rate(store, mode)
        if (mode === 'identity') identityCpu.push(cpuMicros)
        else {
          ;(mode === 'codec' ? coded : plain).push(perSecond)
          ;(mode === 'codec' ? codedCpu : plainCpu).push(cpuMicros)
        }
      } finally {
        await drop()
      }
    }
  }
  const base = median(plain)
  const value = median(coded)
  console.log(
    `SCORE codec-throughput store=${target.label} runs=${RUNS} rounds=${ROUNDS} plain_runs_per_s=${base.toFixed(1)} codec_runs_per_s=${value.toFixed(1)} ratio=${(value / base).toFixed(3)} cpu_us_per_run_plain=${median(plainCpu).toFixed(0)} cpu_us_per_run_codec=${median(codedCpu).toFixed(0)} plain=${plain.map((r) => r.toFixed(0)).join('/')} codec=${coded.map((r) => r.toFixed(0)).join('/')} ${FLOOR ? `cpu_us_per_run_identity=${median(identityCpu).toFixed(0)} ` : ''}load1=${loadBefore.toFixed(2)}..${loadavg()[0].toFixed(2)}`,
  )
  return [
    {
      name: `3-step workflow, AES-256-GCM codec, ${target.label}`,
      value,
      unit: 'runs/s',
      baseline: base,
      ratio: value / base,
      target: 0.85,
      note: `median of ${ROUNDS} interleaved rounds of ${RUNS} runs, ${CONCURRENCY} at a time`,
    },
  ]
}

export async function benchCodec(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-codec-'))
  const rows: Row[] = []
  try {
    if (STORES.includes('sqlite')) rows.push(...(await measure(sqliteTarget(dir))))
    if (!STORES.includes('postgres')) return rows
    if (await pgReachable()) {
      const admin = new pg.Pool({ connectionString: PG_URL, max: 1 })
      try {
        rows.push(...(await measure(postgresTarget(admin))))
      } finally {
        await admin.end()
      }
    } else console.log(`SCORE codec-throughput store=postgres skipped: ${PG_URL} unreachable`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}
