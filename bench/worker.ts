// Worker protocol figures: a round trip through a worker in another process over loopback HTTP
// (dispatch → claim → HTTP callback → next node), and effects/s through 4 worker processes, in
// memory and on a SQLite file. Baselines are the same workflows with an in-process effect,
// measured in alternating rounds of the same run; each figure is a median of those rounds.
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  bearerAuth,
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type EventEnvelope,
  type EventStore,
  httpWorkerQueue,
} from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, percentile, printRows, type Row } from './table.js'
import { spawnWorker, WORKER_TOKEN } from './worker-child.js'

/** The parent's flags (its `--conditions`, `--import tsx`), so workers run the same skein. */
const workerFlags = {
  execArgv: process.execArgv,
  cwd: fileURLToPath(new URL('..', import.meta.url)),
}

const ROUND_TRIPS = 300
const THROUGHPUT_RUNS = 4_000
const SQLITE_RUNS = 1_000
const ROUNDS = 3
const PROCESSES = 4
const CONCURRENCY = 16

const fx = defineModule({
  namespace: 'bench',
  effects: {
    remote: defineEffect({ execution: 'worker' }),
    local: defineEffect({ execute: async (input: { n: number }) => ({ doubled: input.n * 2 }) }),
  },
})

const flowOf = (effect: string) =>
  defineWorkflow({
    name: `bench-${effect}`,
    nodes: {
      a: { run: (ctx) => ctx.invoke(effect, { n: 21 }) },
      b: { after: ['a'], run: ({ results }) => ({ got: results.a }) },
    },
  })
const remote = flowOf('bench.remote')
const local = flowOf('bench.local')

/** Resolves when the run's log shows it finished (live subscription, no polling). */
async function finished(engine: Engine, runId: string): Promise<void> {
  const state = await engine.getRun(runId)
  if (state.status !== 'running') return
  await new Promise<void>((resolve) => {
    let stop: (() => void) | undefined
    let done = false
    const onEvents = (events: readonly EventEnvelope[]) => {
      if (done || !events.some((e) => e.type === 'runtime.run.completed')) return
      done = true
      stop?.()
      resolve()
    }
    engine.subscribe(runId, onEvents).then(async (unsubscribe) => {
      stop = unsubscribe
      if (done) unsubscribe()
      else if ((await engine.getRun(runId)).status !== 'running')
        onEvents([{ type: 'runtime.run.completed' } as EventEnvelope])
    })
  })
}

async function withEngine<T>(
  fn: (engine: Engine, url: string) => Promise<T>,
  store?: EventStore,
): Promise<T> {
  const engine = createEngine({
    ...(store ? { store } : {}),
    modules: [workflow({ definitions: [remote, local] }), fx],
    worker: httpWorkerQueue(),
    authorize: bearerAuth({ worker: WORKER_TOKEN }),
  })
  const server = await engine.serve({ port: 0 })
  try {
    return await fn(engine, server.url)
  } finally {
    await server.close()
    await engine.stop()
  }
}

async function roundTrips(engine: Engine, flow: typeof remote, n: number): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    const { runId } = await engine.start(flow)
    await finished(engine, runId)
    times.push(performance.now() - t0)
  }
  return times
}

/** CPU time (ms) the processes used so far (Linux `/proc`; 0 elsewhere). */
function processesCpuMs(procs: ChildProcess[]): number {
  let ticks = 0
  for (const proc of procs) {
    try {
      const fields = readFileSync(`/proc/${proc.pid}/stat`, 'utf8').split(') ')[1].split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      return 0
    }
  }
  return ticks * 10
}

interface Throughput {
  rate: number
  runIds: string[]
  /** CPU per run of the engine process, and of the worker processes together (ms). */
  cpuMs: number
  workersCpuMs: number
}

async function throughput(
  engine: Engine,
  flow: typeof remote,
  n: number,
  procs: ChildProcess[] = [],
): Promise<Throughput> {
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  const workers0 = processesCpuMs(procs)
  const runs = await Promise.all(Array.from({ length: n }, () => engine.start(flow)))
  await Promise.all(runs.map((r) => finished(engine, r.runId)))
  const cpu = process.cpuUsage(cpu0)
  return {
    rate: n / ((performance.now() - t0) / 1000),
    runIds: runs.map((r) => r.runId),
    cpuMs: (cpu.user + cpu.system) / 1000 / n,
    workersCpuMs: (processesCpuMs(procs) - workers0) / n,
  }
}

/**
 * Rounds alternating the worker effect and the in-process one (which goes first alternates
 * too), after a warm-up round of each: medians of effects/s, CPU and claim → complete.
 */
async function rounds(engine: Engine, procs: ChildProcess[], runs: number) {
  await throughput(engine, remote, Math.min(runs, 1_000), procs)
  await throughput(engine, local, Math.min(runs, 1_000))
  const worker: Throughput[] = []
  const inProcess: Throughput[] = []
  const held: number[] = []
  const loads: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 1) inProcess.push(await throughput(engine, local, runs))
    worker.push(await throughput(engine, remote, runs, procs))
    if (round % 2 === 0) inProcess.push(await throughput(engine, local, runs))
    held.push(median(await claimToComplete(engine, worker[round].runIds.slice(0, 300))))
    loads.push(loadavg()[0])
  }
  const of = (list: Throughput[], key: 'rate' | 'cpuMs' | 'workersCpuMs') =>
    median(list.map((t) => t[key]))
  return {
    rate: of(worker, 'rate'),
    baseRate: of(inProcess, 'rate'),
    cpuMs: of(worker, 'cpuMs'),
    baseCpuMs: of(inProcess, 'cpuMs'),
    workersCpuMs: of(worker, 'workersCpuMs'),
    held: median(held),
    load: `load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
  }
}

function throughputRows(where: string, runs: number, r: Awaited<ReturnType<typeof rounds>>): Row[] {
  const note = `${where}, medians of ${ROUNDS} rounds of ${runs.toLocaleString('en')} runs, ${r.load}`
  return [
    {
      name: `effects/s through ${PROCESSES} worker processes (${CONCURRENCY} loops each, one run per effect)`,
      value: r.rate,
      unit: 'effects/s',
      baseline: r.baseRate,
      ratio: r.rate / r.baseRate,
      note,
    },
    {
      name: 'claim → complete p50 under that load (attempt started → completed, from the log)',
      value: r.held,
      unit: 'ms',
      note: where,
    },
    {
      name: 'engine process CPU per run, worker effect (baseline: in-process effect)',
      value: r.cpuMs,
      unit: 'ms',
      baseline: r.baseCpuMs,
      ratio: r.cpuMs / r.baseCpuMs,
      note: where,
    },
    {
      name: `the ${PROCESSES} worker processes' CPU per effect, together`,
      value: r.workersCpuMs,
      unit: 'ms',
      note: where,
    },
  ]
}

/** Claim (the attempt recorded started) to completion recorded, from the runs' logs (ms). */
async function claimToComplete(engine: Engine, runIds: string[]): Promise<number[]> {
  const out: number[] = []
  for (const runId of runIds) {
    const events = await engine.getEvents(runId)
    const started = events.find((e) => e.type === 'runtime.effect.attempt.started')
    const completed = events.find((e) => e.type === 'runtime.effect.completed')
    if (started && completed) out.push(completed.ts - started.ts)
  }
  return out
}

export async function benchWorker(): Promise<Row[]> {
  const rows: Row[] = []
  await withEngine(async (engine, url) => {
    const one = await spawnWorker(url, 1, workerFlags)
    try {
      await roundTrips(engine, remote, 30)
      const remoteTimes = await roundTrips(engine, remote, ROUND_TRIPS)
      await roundTrips(engine, local, 30)
      const localTimes = await roundTrips(engine, local, ROUND_TRIPS)
      const p50 = median(remoteTimes)
      const base = median(localTimes)
      rows.push({
        name: 'worker round trip p50 (start → dispatch → claim → HTTP callback → next node)',
        value: p50,
        unit: 'ms',
        baseline: base,
        ratio: p50 / base,
      })
      rows.push({ name: 'worker round trip p99', value: percentile(remoteTimes, 99), unit: 'ms' })
    } finally {
      one.kill('SIGTERM')
    }
  })
  const measure = async (engine: Engine, url: string, runs: number) => {
    const procs = await Promise.all(
      Array.from({ length: PROCESSES }, () => spawnWorker(url, CONCURRENCY, workerFlags)),
    )
    try {
      return await rounds(engine, procs, runs)
    } finally {
      for (const p of procs) p.kill('SIGTERM')
    }
  }
  const inMemory = await withEngine((engine, url) => measure(engine, url, THROUGHPUT_RUNS))
  rows.push(...throughputRows('memory store', THROUGHPUT_RUNS, inMemory))
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-worker-'))
  try {
    const store = sqliteStore({ path: join(dir, 'worker.db') })
    const onSqlite = await withEngine((engine, url) => measure(engine, url, SQLITE_RUNS), store)
    await store.close()
    rows.push(...throughputRows('SQLite file, synchronous FULL', SQLITE_RUNS, onSqlite))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  printRows('workers', await benchWorker())
}
