// The physical floor for Skein on Postgres: a hand-written loop writing a 3-step workflow's
// events (the 19 event types the SQLite floor writes) into the store's own schema, with the same
// commit grouping (one transaction per step, shared by the runs in flight), through a raw
// driver: `pg` or `postgres` (postgres.js). One statement per step and group: the fewest round
// trips a hand-written loop can make.
import { createRequire } from 'node:module'
import type { PostgresQueryable } from 'skein/postgres'
import { migrationSql, schemaName } from '../src/stores/postgres/schema.js'
import { type FloorRows, floorEvent, floorRunId, STEPS } from './floor-rows.js'

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
  rows: FloorRows = 'small',
): Promise<number> {
  const s = `"${schema}"`
  const sized = rows === 'skein'
  const insertEvents = (source: string) => `
    INSERT INTO ${s}.skein_events (run_no, seq, id, ts, type, thread_id, origin, ${sized ? 'effect_id, ' : ''}payload)
    SELECT t.run_no, u.seq, u.id, u.ts, u.type, ${sized ? 'u.thread, ' : "'t', "}'runtime', ${sized ? 'u.effect, ' : ''}u.payload
    FROM unnest($3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::text[], $8::text[]${sized ? ', $9::text[], $10::text[]' : ''})
      AS u(run_id, seq, id, ts, type, payload${sized ? ', thread, effect' : ''})
    JOIN ${source} t USING (run_id)`
  // Skein's run row: meta and lease written with the first commit, then status, time and
  // lease expiry with each one ($11: the time, $12: the status).
  const first = sized
    ? `WITH t AS (INSERT INTO ${s}.skein_runs (run_id, tail, status, kind, definition_name,
          definition_version, created_at, updated_at, lease_owner, lease_epoch, lease_expires_at)
        SELECT u.id, u.tail, $12::text, 'workflow', 'three', 'v1', $11::bigint, $11::bigint, 'vm:floor', 1,
          $11::bigint + 10000
        FROM unnest($1::text[], $2::bigint[]) AS u(id, tail) RETURNING run_no, run_id)
      ${insertEvents('t')}`
    : `WITH t AS (INSERT INTO ${s}.skein_runs (run_id, tail)
      SELECT * FROM unnest($1::text[], $2::bigint[]) RETURNING run_no, run_id)
    ${insertEvents('t')}`
  const next = `WITH t AS (UPDATE ${s}.skein_runs r SET tail = u.tail${
    sized
      ? ', status = $12::text, updated_at = $11::bigint, lease_expires_at = $11::bigint + 10000'
      : ''
  }
      FROM unnest($1::text[], $2::bigint[]) AS u(run_id, tail)
      WHERE r.run_id = u.run_id RETURNING r.run_no, r.run_id)
    ${insertEvents('t')}`
  const t0 = performance.now()
  for (let r = 0; r < runs; r += concurrency) {
    const ids = Array.from({ length: Math.min(concurrency, runs - r) }, (_, i) =>
      floorRunId(rows, r + i),
    )
    let tail = 0
    for (const [step, types] of STEPS.entries()) {
      const cols: unknown[][] = sized ? [[], [], [], [], [], [], [], []] : [[], [], [], [], [], []]
      for (const id of ids) {
        types.forEach((type, i) => {
          const seq = tail + i + 1
          const e = floorEvent(rows, id, step, seq, type)
          cols[0].push(id)
          cols[1].push(seq)
          cols[2].push(e.id)
          cols[3].push(Date.now())
          cols[4].push(type)
          cols[5].push(e.payload)
          if (!sized) return
          cols[6].push(e.thread)
          cols[7].push(e.effect)
        })
      }
      tail += types.length
      const status = step === STEPS.length - 1 ? 'completed' : 'running'
      await client.query(step === 0 ? first : next, [
        ids,
        ids.map(() => tail),
        ...cols,
        ...(sized ? [Date.now(), status] : []),
      ])
    }
  }
  return runs / ((performance.now() - t0) / 1000)
}
