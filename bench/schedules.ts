// Schedules: 10,000 on one host (SQLite file). Idle cost of holding them (memory, CPU) against
// the same engine with none, measured in the same run; then every one of them every minute
// (spread over the minute's seconds) and how late each tick's run starts (target p99 < 1 s).
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createEngine } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, percentile, type Row } from './table.js'

const N = 10_000
const IDLE_MS = 10_000
const LOAD_MS = 75_000
const WARM_MS = 15_000

const job = defineWorkflow({ name: 'job', nodes: { go: { run: () => 1 } } })
const start = { kind: 'workflow', definitionName: 'job' }

async function idleCost(path: string, cron: string | null) {
  const store = sqliteStore({ path })
  const engine = createEngine({ store, modules: [workflow({ definitions: [job] })] })
  await engine.ready()
  const created = performance.now()
  if (cron !== null) {
    for (let i = 0; i < N; i++) {
      await engine.schedules.create({
        name: `s${i}`,
        cron: cron.replace('S', String(i % 60)),
        start,
      })
    }
  }
  const createMs = performance.now() - created
  global.gc?.()
  await sleep(1000)
  const cpu = process.cpuUsage()
  const t0 = performance.now()
  await sleep(IDLE_MS)
  const used = process.cpuUsage(cpu)
  const cpuPct = ((used.user + used.system) / 1000 / (performance.now() - t0)) * 100
  global.gc?.()
  const rss = process.memoryUsage().rss / 2 ** 20
  return { engine, store, createMs, cpuPct, rss }
}

export async function benchSchedules(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-schedules-'))
  try {
    const base = await idleCost(join(dir, 'none.db'), null)
    await base.engine.stop()
    await base.store.close()
    // Yearly ticks: nothing fires, the ticker holds 10,000 schedules.
    const idle = await idleCost(join(dir, 'idle.db'), '0 0 1 1 *')
    await idle.engine.stop()
    await idle.store.close()

    const store = sqliteStore({ path: join(dir, 'load.db') })
    const engine = createEngine({ store, modules: [workflow({ definitions: [job] })] })
    await engine.ready()
    for (let i = 0; i < N; i++) {
      await engine.schedules.create({ name: `m${i}`, cron: `${i % 60} * * * * *`, start })
    }
    const from = Date.now()
    const cpu = process.cpuUsage()
    await sleep(LOAD_MS)
    const used = process.cpuUsage(cpu)
    const to = Date.now()
    await engine.stop()
    // Ticks of the first WARM_MS after the creations came late behind them (10,000 fsynced
    // inserts compete with the ticker): reported apart from the steady state after it.
    const late: number[] = []
    const warm: number[] = []
    for (const runId of await store.listRuns()) {
      const tick = Date.parse(runId.split(':').slice(2).join(':'))
      if (tick < from + 1000 || tick > to - 5000) continue
      const [first] = await store.read(runId, { limit: 1 })
      if (first) (tick < from + WARM_MS ? warm : late).push(first.ts - tick)
    }
    await store.close()
    const load = `load average at the end: ${loadavg()[0]?.toFixed(1)}`
    return [
      { name: 'idle RSS, no schedules (baseline)', value: base.rss, unit: 'MiB' },
      {
        name: `idle RSS, ${N} schedules`,
        value: idle.rss,
        unit: 'MiB',
        baseline: base.rss,
        ratio: idle.rss / base.rss,
      },
      { name: 'idle CPU, no schedules (baseline)', value: base.cpuPct, unit: '% of a core' },
      {
        name: `idle CPU, ${N} schedules`,
        value: idle.cpuPct,
        unit: '% of a core',
        baseline: base.cpuPct,
      },
      {
        name: `create ${N} schedules`,
        value: idle.createMs,
        unit: 'ms',
        note: 'one SQLite write each',
      },
      {
        name: `ticks started (${N} every minute, ${(LOAD_MS - WARM_MS - 5000) / 1000} s after ${WARM_MS / 1000} s of warm-up)`,
        value: late.length,
        unit: 'runs',
      },
      {
        name: `tick lateness max in the ${WARM_MS / 1000} s after creating ${N}`,
        value: Math.max(...warm),
        unit: 'ms',
      },
      { name: 'tick lateness p50', value: median(late), unit: 'ms' },
      { name: 'tick lateness p99', value: percentile(late, 99), unit: 'ms', target: 1000 },
      { name: 'tick lateness max', value: Math.max(...late), unit: 'ms' },
      {
        name: 'CPU under load',
        value: ((used.user + used.system) / 1000 / (to - from)) * 100,
        unit: '% of a core',
        note: load,
      },
    ]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
