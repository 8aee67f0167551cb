// Attribute search (docs/operating-runs.md, "Finding runs"): 100,000 runs over 1,000 customers
// on SQLite (and Postgres when SKEIN_PG_URL is set); the p50 and p99 of one page of "this
// customer's failed runs created in the middle half", through the store's listSummaries.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import type { EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { median, percentile, type Row } from './table.js'

const RUNS = 100_000
const CUSTOMERS = 1_000
const QUERIES = 300
const COLUMNS =
  'status, kind, definition_name, definition_version, created_at, updated_at, next_deadline_at'

/** Run i: customer c(i % 1000), failed when i % 3 === 0, created at i (attributes by the trigger). */
function runsSql(s: string, sqlite: boolean): string {
  const series = sqlite
    ? `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${RUNS - 1}) SELECT i FROM n`
    : `SELECT i FROM generate_series(0, ${RUNS - 1}) i`
  const json = sqlite ? 'json_object' : 'json_build_object'
  return `
    INSERT INTO ${s}skein_runs (run_id, tail, ${COLUMNS})
      SELECT 'r' || i, 1, CASE WHEN i % 3 = 0 THEN 'failed' ELSE 'completed' END, 'workflow',
        'order', 'v1', i, i, NULL FROM (${series}) q ORDER BY i;
    INSERT INTO ${s}skein_events (run_no, seq, id, ts, type, origin, payload)
      SELECT run_no, 1, run_id || '-1', created_at, 'runtime.run.started', 'runtime',
        ${json}('kind', 'workflow', 'attributes',
          ${json}('customer', 'c' || (created_at % ${CUSTOMERS}), 'amount', 1))${sqlite ? '' : '::text'}
      FROM ${s}skein_runs ORDER BY run_no;`
}

async function measure(label: string, store: EventStore): Promise<Row[]> {
  const times: number[] = []
  let found = 0
  for (let q = 0; q < QUERIES; q++) {
    const started = performance.now()
    const page = await store.listSummaries!({
      limit: 50,
      status: ['failed'],
      createdFrom: RUNS / 4,
      createdBefore: (RUNS * 3) / 4,
      attributes: [{ name: 'customer', eq: `c${(q * 7919) % CUSTOMERS}` }],
    })
    times.push(performance.now() - started)
    found += page.runs.length
  }
  const p50 = median(times)
  const p99 = percentile(times, 99)
  console.log(
    `SCORE attribute-search store=${label} runs=${RUNS} customers=${CUSTOMERS} p50_ms=${p50.toFixed(2)} p99_ms=${p99.toFixed(2)} matches_per_page=${(found / QUERIES).toFixed(1)}`,
  )
  return [
    {
      name: `${label}: customer + status + created range, p50`,
      value: p50,
      unit: 'ms',
      target: 50,
    },
    { name: `${label}: customer + status + created range, p99`, value: p99, unit: 'ms' },
  ]
}

export async function benchAttributeSearch(): Promise<Row[]> {
  const rows: Row[] = []
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-attributes-'))
  try {
    const path = join(dir, 'search.db')
    await sqliteStore({ path }).close()
    const db = new Database(path)
    db.exec(runsSql('', true))
    db.close()
    const store = sqliteStore({ path })
    rows.push(...(await measure('sqlite', store)))
    await store.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const url = process.env.SKEIN_PG_URL
  if (url) {
    const schema = `bench_attributes_${process.pid}`
    const store = postgresStore({ connectionString: url }, { schema })
    const admin = new pg.Pool({ connectionString: url, max: 1 })
    try {
      await store.ready()
      await admin.query(runsSql(`"${schema}".`, false))
      await admin.query(`ANALYZE "${schema}".skein_runs; ANALYZE "${schema}".skein_run_attributes`)
      rows.push(...(await measure('postgres', store)))
    } finally {
      await store.close()
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await admin.end()
    }
  }
  return rows
}
