// Retention (docs/data-lifecycle.md): 100,000 finished runs (5 events each) deleted by the
// retention sweep on SQLite (and Postgres when SKEIN_PG_URL is set): runs deleted per second,
// and the p99 latency of starts made concurrently during the sweep against the same starts on
// the same store with no sweep, measured in the same run.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, type EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { makeEnvelopes } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, percentile, type Row } from './table.js'

const RUNS = Number(process.env.SKEIN_BENCH_RETENTION_RUNS ?? 100_000)
const CONCURRENCY = 8

const job = defineWorkflow({ name: 'job', nodes: { go: { run: () => 1 } } })
const modules = [workflow({ definitions: [job] })]

/** Finished runs written straight to the store, long finished (updatedAt 1 ms after epoch). */
async function fill(store: EventStore): Promise<void> {
  const meta = {
    status: 'completed' as const,
    kind: 'workflow',
    definitionName: 'job',
    definitionVersion: '1',
    createdAt: 1,
    updatedAt: 1,
    nextDeadlineAt: null,
  }
  for (let i = 0; i < RUNS; i += 1000) {
    const batch: Array<Promise<void>> = []
    for (let j = i; j < Math.min(RUNS, i + 1000); j++) {
      const runId = `old-${j}`
      const events = makeEnvelopes(runId, 1, 5, (seq) => ({ seq, note: 'a finished run' }))
      batch.push(store.append(runId, events, { expectedSeq: 0, meta }))
    }
    await Promise.all(batch)
  }
}

/** Starts of a one-node run, CONCURRENCY at a time, until `done()`; each start's latency. */
async function starts(engine: ReturnType<typeof createEngine>, done: () => boolean, min = 400) {
  const latencies: number[] = []
  let n = 0
  const lane = async () => {
    while (!done() || latencies.length < min) {
      const t0 = performance.now()
      await engine.start(job, undefined, { runId: `live-${n++}-${Math.random()}` })
      latencies.push(performance.now() - t0)
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, lane))
  return latencies
}

async function measure(label: string, open: () => EventStore): Promise<Row[]> {
  const store = open()
  await fill(store)
  // Baseline: the same starts on the same store, no sweep.
  const plain = createEngine({ store, modules })
  await plain.ready()
  const base = await starts(plain, () => true, 2000)
  await plain.stop()

  const engine = createEngine({
    store,
    modules,
    retention: { finishedAfterMs: 60_000, batchSize: 1000, intervalMs: 3_600_000 },
  })
  const t0 = performance.now()
  let swept = false
  const watch = (async () => {
    for (;;) {
      const status = await engine.retention()
      if ((status.deletedTotal ?? 0) >= RUNS) break
      await new Promise((r) => setTimeout(r, 20))
    }
    swept = true
  })()
  await engine.ready()
  const during = await starts(engine, () => swept)
  await watch
  const sweepMs = performance.now() - t0
  await engine.stop()
  await store.close?.()
  const p99Base = percentile(base, 99)
  const p99During = percentile(during, 99)
  const rate = RUNS / (sweepMs / 1000)
  console.log(
    `SCORE retention-delete store=${label} runs=${RUNS} runs_per_s=${Math.round(rate)} start_p99_ms=${p99During.toFixed(2)} start_p99_no_sweep_ms=${p99Base.toFixed(2)}`,
  )
  return [
    { name: `${label}: ${RUNS} finished runs deleted by the sweep`, value: rate, unit: 'runs/s' },
    { name: `${label}: start p50, no sweep (baseline)`, value: median(base), unit: 'ms' },
    { name: `${label}: start p50 during the sweep`, value: median(during), unit: 'ms' },
    { name: `${label}: start p99, no sweep (baseline)`, value: p99Base, unit: 'ms' },
    {
      name: `${label}: start p99 during the sweep`,
      value: p99During,
      unit: 'ms',
      baseline: p99Base,
      ratio: p99During / p99Base,
    },
  ]
}

export async function benchRetention(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-retention-'))
  try {
    const rows = await measure('sqlite', () => sqliteStore({ path: join(dir, 'runs.db') }))
    const url = process.env.SKEIN_PG_URL
    if (url) {
      const schema = `bench_retention_${process.pid}`
      const pg = await import('pg')
      const admin = new pg.default.Pool({ connectionString: url, max: 1 })
      try {
        rows.push(
          ...(await measure('postgres', () =>
            postgresStore({ connectionString: url }, { schema }),
          )),
        )
      } finally {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await admin.end()
      }
    }
    return rows
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
