// Bulk retry by filter (docs/operating-runs.md, "Bulk actions"): 500 runs failed by a simulated
// provider outage, then two bulk retries of the same filter at once. Figures: how long until
// every run completed, and the effect calls the retries made (exactly one per run: a second
// call for any run would be a retry done twice, and fails the bench). On SQLite and, when
// reachable, Postgres.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, defineEffect, defineModule, type EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import type { Row } from './table.js'

const PG_URL = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const SCHEMA = `bench_bulk_${process.pid}`
const RUNS = 500
const START_CONCURRENCY = 16

async function measure(label: string, store: EventStore): Promise<Row[]> {
  let outage = true
  const calls = new Map<string, number>()
  const provider = defineModule({
    namespace: 'provider',
    effects: {
      charge: defineEffect<{ order: number }, string>({
        retry: { maxAttempts: 1 },
        execute: async (input) => {
          const key = String(input.order)
          calls.set(key, (calls.get(key) ?? 0) + 1)
          if (outage) throw new Error('the provider is down')
          return 'charged'
        },
      }),
    },
  })
  const order = defineWorkflow({
    name: 'order',
    nodes: { charge: { run: (ctx) => ctx.invoke('provider.charge', ctx.input) } },
  })
  const engine = createEngine({ store, modules: [provider, workflow({ definitions: [order] })] })
  try {
    const runIds: string[] = []
    let next = 0
    await Promise.all(
      Array.from({ length: START_CONCURRENCY }, async () => {
        while (next < RUNS) {
          const i = next++
          const { runId } = await engine.start(order, { order: i })
          runIds.push(runId)
        }
      }),
    )
    await Promise.all(runIds.map((runId) => engine.result(runId).catch(() => undefined)))
    const failedFirst = [...calls.values()].reduce((a, b) => a + b, 0)
    if (failedFirst !== RUNS) throw new Error(`${failedFirst} first attempts for ${RUNS} runs`)

    outage = false
    const filter = { status: 'failed' as const, definitionName: 'order' }
    const t0 = performance.now()
    const [first, second] = await Promise.all([
      engine.retryMany(filter, { batchSize: 10 }),
      engine.retryMany(filter, { batchSize: 10 }),
    ])
    await Promise.all(runIds.map((runId) => engine.result(runId)))
    const ms = performance.now() - t0
    const retried = [...calls.values()].reduce((a, b) => a + b, 0) - RUNS
    const twice = [...calls.values()].filter((n) => n > 2).length
    if (retried !== RUNS || twice > 0) {
      throw new Error(`${retried} retried effect calls for ${RUNS} runs, ${twice} runs twice`)
    }
    return [
      {
        name: `${label}: ${RUNS} failed runs, two concurrent bulk retries, until all completed`,
        value: ms,
        unit: 'ms',
        note: `retried by the first ${first.done.length}, by the second ${second.done.length}; refused ${first.refused.length + second.refused.length}`,
      },
      {
        name: `${label}: effect calls made by the retries (one per run)`,
        value: retried,
        unit: 'calls',
        target: RUNS,
      },
    ]
  } finally {
    await engine.stop()
    await store.close?.()
  }
}

export async function benchBulkRetry(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-bulk-'))
  const out: Row[] = []
  try {
    out.push(...(await measure('SQLite', sqliteStore({ path: join(dir, 'bulk.db') }))))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const pg = (await import('pg')).default
  const admin = new pg.Client({ connectionString: PG_URL })
  try {
    await admin.connect()
  } catch {
    console.log(`skipped Postgres: none reachable at ${PG_URL} (set SKEIN_PG_URL)`)
    return out
  }
  try {
    out.push(
      ...(await measure(
        'Postgres',
        postgresStore({ connectionString: PG_URL }, { schema: SCHEMA }),
      )),
    )
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`)
    await admin.end()
  }
  return out
}
