// The physical floor for Skein on Postgres: a hand-written loop writing a 3-step workflow's
// events (the 19 event types the SQLite floor writes) into the store's own schema, with the same
// commit grouping (one transaction per step, shared by the runs in flight), through a raw
// driver: `pg` or `postgres` (postgres.js). One statement per step and group: the fewest round
// trips a hand-written loop can make.
import { createRequire } from 'node:module'
import type { PostgresQueryable } from 'skein/postgres'
import { migrationSql, schemaName } from '../src/stores/postgres/schema.js'

export type RawDriver = 'pg' | 'postgres'

const require = createRequire(import.meta.url)

/** A one-connection client of `driver`, behind the store's `query(text, params)` shape. */
export function rawClient(
  driver: RawDriver,
  url: string,
): PostgresQueryable & { end(): Promise<void> } {
  if (driver === 'pg') {
    const pg = require('pg')
    const pool = new pg.Pool({ connectionString: url, max: 1 })
    return { query: (text, params) => pool.query(text, params), end: () => pool.end() }
  }
  const postgres = require('postgres')
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  return {
    query: async (text, params) => ({ rows: await sql.unsafe(text, params ?? []) }),
    end: () => sql.end(),
  }
}

const STEP = [
  'workflow.node.started',
  'runtime.effect.requested',
  'runtime.effect.attempt.started',
  'runtime.effect.completed',
  'workflow.node.finished',
]
const STEPS = [
  ['runtime.run.started', 'runtime.thread.started', ...STEP],
  STEP,
  [...STEP, 'runtime.thread.completed', 'runtime.run.completed'],
]

/** Fresh schema `name` (dropped first), migrated to the store's current version. */
export async function freshSchema(client: PostgresQueryable, name: string): Promise<void> {
  await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`)
  await client.query(migrationSql(schemaName(name)))
}

/** Runs `runs` 3-step runs, `concurrency` at a time (one group per step); returns runs/s. */
export async function floorRuns(
  client: PostgresQueryable,
  schema: string,
  runs: number,
  concurrency: number,
): Promise<number> {
  const s = `"${schema}"`
  const insertEvents = (source: string) => `
    INSERT INTO ${s}.skein_events (run_no, seq, id, ts, type, thread_id, origin, payload)
    SELECT t.run_no, u.seq, u.id, u.ts, u.type, 't', 'runtime', u.payload
    FROM unnest($3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::text[], $8::text[])
      AS u(run_id, seq, id, ts, type, payload)
    JOIN ${source} t USING (run_id)`
  const first = `WITH t AS (INSERT INTO ${s}.skein_runs (run_id, tail)
      SELECT * FROM unnest($1::text[], $2::bigint[]) RETURNING run_no, run_id)
    ${insertEvents('t')}`
  const next = `WITH t AS (UPDATE ${s}.skein_runs r SET tail = u.tail
      FROM unnest($1::text[], $2::bigint[]) AS u(run_id, tail)
      WHERE r.run_id = u.run_id RETURNING r.run_no, r.run_id)
    ${insertEvents('t')}`
  const t0 = performance.now()
  for (let r = 0; r < runs; r += concurrency) {
    const ids = Array.from({ length: Math.min(concurrency, runs - r) }, (_, i) => `floor-${r + i}`)
    let tail = 0
    for (const [step, types] of STEPS.entries()) {
      const cols: unknown[][] = [[], [], [], [], [], []]
      for (const id of ids) {
        types.forEach((type, i) => {
          const seq = tail + i + 1
          cols[0].push(id)
          cols[1].push(seq)
          cols[2].push(`${id}-${seq}`)
          cols[3].push(Date.now())
          cols[4].push(type)
          cols[5].push(JSON.stringify({ step: seq, runId: id }))
        })
      }
      tail += types.length
      await client.query(step === 0 ? first : next, [ids, ids.map(() => tail), ...cols])
    }
  }
  return runs / ((performance.now() - t0) / 1000)
}
