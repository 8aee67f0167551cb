// Attribute search at scale: 100,000 runs over 1,000 customers on a real SQLite file and a real
// Postgres schema. The query plans of "customer + status + created range" read the attribute
// index and the run rows by key (no scan of every run), and paging through every match while
// new runs are being created lists each match exactly once.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, describe, expect, it } from 'vitest'
import type { EventStore, StoreSummaryQuery } from '../../src/core/ports.js'
import { summaryPageSql } from '../../src/stores/shared/summary-filter.js'
import { META_COLUMNS } from '../../src/stores/sqlite/statements.js'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'
import { freshPath } from '../support/temp-dirs.js'

const RUNS = 100_000
const CUSTOMERS = 1_000
const dir = mkdtempSync(join(tmpdir(), 'skein-attribute-plans-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Customer 42's failed runs created in the middle half of the runs. */
const QUERY: StoreSummaryQuery = {
  limit: 20,
  status: ['failed'],
  createdFrom: RUNS / 4,
  createdBefore: (RUNS * 3) / 4,
  attributes: [{ name: 'customer', eq: 'c42' }],
}
/** Run i: customer c(i % 1000), failed when i % 3 === 0, created at i. */
const expected = () => {
  const ids: string[] = []
  for (let i = RUNS - 1; i >= 0; i--) {
    if (i % CUSTOMERS === 42 && i % 3 === 0 && i >= RUNS / 4 && i < (RUNS * 3) / 4) {
      ids.push(`r${i}`)
    }
  }
  return ids
}

const started = (customer: string) => ({
  kind: 'workflow',
  definitionName: 'order',
  attributes: { customer, amount: 1 },
})

/** Pages through QUERY, creating a new matching run before each page; returns the ids seen. */
async function pageWhileCreating(store: EventStore): Promise<string[]> {
  const seen: string[] = []
  let cursor: string | undefined
  for (let n = 0; n < 1000; n++) {
    const runId = `new${n}`
    await store.append(
      runId,
      [
        {
          id: `${runId}-1`,
          runId,
          seq: 1,
          ts: 1,
          type: 'runtime.run.started',
          payload: started('c42'),
          threadId: null,
          origin: 'runtime',
        },
      ],
      {
        expectedSeq: 0,
        meta: {
          status: 'failed',
          kind: 'workflow',
          definitionName: 'order',
          definitionVersion: 'v1',
          createdAt: RUNS / 2,
          updatedAt: RUNS / 2,
          nextDeadlineAt: null,
        },
      },
    )
    const page = await store.listSummaries!({ ...QUERY, cursor })
    seen.push(...page.runs.map((r) => r.runId))
    if (!page.nextCursor) return seen
    cursor = page.nextCursor
  }
  throw new Error('too many pages')
}

describe('attribute search over 100,000 runs', () => {
  it('SQLite: reads the attribute index, never every run, and pages exactly once', async () => {
    const path = freshPath(dir, 'plans.db')
    await sqliteStore({ path }).close()
    const db = new Database(path)
    // Run i: run_no i + 1; its start event sets customer c(i % 1000), written to the attribute
    // table as the store writes a start's attributes (run-attributes.ts).
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${RUNS - 1})
      INSERT INTO skein_runs (run_no, run_id, tail, ${META_COLUMNS})
        SELECT i + 1, 'r' || i, 1, CASE WHEN i % 3 = 0 THEN 'failed' ELSE 'completed' END,
          'workflow', 'order', 'v1', i, i, NULL FROM n;
      INSERT INTO skein_events (run_no, seq, id, ts, type, origin, payload)
        SELECT run_no, 1, run_id || '-1', created_at, 'runtime.run.started', 'runtime',
          json_object('kind', 'workflow', 'attributes',
            json_object('customer', 'c' || (created_at % ${CUSTOMERS}), 'amount', 1))
        FROM skein_runs ORDER BY run_no;
      INSERT INTO skein_run_attributes (run_no, name, value, is_bool)
        SELECT e.run_no, a.key, a.atom, 0 FROM skein_events e, json_each(e.payload, '$.attributes') a;`)
    expect(db.prepare('SELECT count(*) FROM skein_run_attributes').pluck().get()).toBe(RUNS * 2)
    const { sql, params } = summaryPageSql(
      { runs: 'skein_runs', attributes: 'skein_run_attributes' },
      META_COLUMNS,
      QUERY,
      RUNS,
      'sqlite',
    )
    const plan = db
      .prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...params)
      .map((row) => (row as { detail: string }).detail)
    console.log(`SQLite plan (customer + status + created range):\n  ${plan.join('\n  ')}`)
    expect(plan.join(' | ')).toMatch(
      /SEARCH a USING COVERING INDEX skein_run_attributes_value \(name=\? AND value=\? AND run_no<\?\)/,
    )
    expect(plan.join(' | ')).toMatch(/SEARCH r USING INTEGER PRIMARY KEY \(rowid=\?\)/)
    expect(plan.join(' | ')).not.toMatch(/SCAN|TEMP B-TREE/)
    db.close()

    const store = sqliteStore({ path })
    const seen = await pageWhileCreating(store)
    await store.close()
    // Newest first: runs created while paging sort before the first page, so none is listed
    // but the first one (created before the first page); every old match exactly once.
    expect(seen.filter((id) => !id.startsWith('new'))).toEqual(expected())
    expect(new Set(seen).size).toBe(seen.length)
  }, 120_000)

  describe.runIf(postgresAvailable('attribute-plans'))('Postgres', () => {
    const schemas = testSchemas('attrplans')
    it('reads the attribute index, never every run, and pages exactly once', async () => {
      const schema = schemas.next()
      const store = postgresStore({ connectionString: PG_URL }, { schema })
      await store.ready()
      await store.listSummaries({ limit: 1 })
      const s = `"${schema}"`
      await schemas.admin.query(`
        INSERT INTO ${s}.skein_runs (run_id, tail, status, kind, definition_name,
            definition_version, created_at, updated_at)
          SELECT 'r' || i, 1, CASE WHEN i % 3 = 0 THEN 'failed' ELSE 'completed' END,
            'workflow', 'order', 'v1', i, i
          FROM generate_series(0, ${RUNS - 1}) i ORDER BY i;
        INSERT INTO ${s}.skein_events (run_no, seq, id, ts, type, origin, payload)
          SELECT r.run_no, 1, r.run_id || '-1', r.created_at, 'runtime.run.started', 'runtime',
            json_build_object('kind', 'workflow', 'attributes',
              json_build_object('customer', 'c' || (r.created_at % ${CUSTOMERS}), 'amount', 1))::text
          FROM ${s}.skein_runs r;
        ANALYZE ${s}.skein_runs;
        ANALYZE ${s}.skein_run_attributes;`)
      const { sql, params } = summaryPageSql(
        { runs: `${s}.skein_runs`, attributes: `${s}.skein_run_attributes` },
        META_COLUMNS,
        QUERY,
        RUNS,
        'postgres',
      )
      const { rows } = await schemas.admin.query(`EXPLAIN ${sql}`, params)
      const plan = rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n')
      console.log(`Postgres plan (customer + status + created range):\n${plan}`)
      expect(plan).toMatch(/Index (Only )?Scan (Backward )?using skein_run_attributes_str/)
      expect(plan).not.toMatch(/Seq Scan/)
      const seen = await pageWhileCreating(store)
      await store.close()
      expect(seen.filter((id) => !id.startsWith('new'))).toEqual(expected())
      expect(new Set(seen).size).toBe(seen.length)
    }, 180_000)
  })
})
