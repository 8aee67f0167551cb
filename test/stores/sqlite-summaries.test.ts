import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import type { StoreSummaryQuery } from '../../src/core/ports.js'
import { summaryPageSql } from '../../src/stores/shared/summary-filter.js'
import { sqliteStore } from '../../src/stores/sqlite/index.js'
import { META_COLUMNS } from '../../src/stores/sqlite/statements.js'
import { makeEnvelopes } from '../../src/testing/make-envelopes.js'
import { meta } from '../../src/testing/summary-contract.js'
import { freshPath } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-summaries-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('sqlite summary pages', () => {
  it('read through an index, never a scan of every run followed by a sort', async () => {
    const path = freshPath(dir, 'plans.db')
    const store = sqliteStore({ path })
    await store.append('r1', makeEnvelopes('r1', 1, 1), {
      expectedSeq: 0,
      meta: meta('running', 1),
    })
    await store.close()
    const db = new Database(path, { readonly: true })
    const plan = (query: Omit<StoreSummaryQuery, 'limit'>, cursor?: number) => {
      const { sql, params } = summaryPageSql(
        { runs: 'skein_runs', attributes: 'skein_run_attributes' },
        META_COLUMNS,
        { limit: 5, ...query },
        cursor,
        'sqlite',
      )
      return db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...params)
        .map((row) => (row as { detail: string }).detail)
        .join(' | ')
    }
    // Newest first straight off the rowid (run_no) b-tree, from the cursor down; oldest up.
    expect(plan({}, 10)).toMatch(/SEARCH skein_runs USING INTEGER PRIMARY KEY \(rowid<\?\)/)
    expect(plan({ order: 'oldest' }, 10)).toMatch(/INTEGER PRIMARY KEY \(rowid>\?\)/)
    for (const query of [{}, { order: 'oldest' as const }]) {
      expect(plan(query, 10)).not.toMatch(/TEMP B-TREE/)
    }
    // A status reads only that status's entries of skein_runs_status, already in run_no order.
    const status = plan({ status: ['running'] }, 10)
    expect(status).toMatch(/USING INDEX skein_runs_status \(status=\? AND rowid<\?\)/)
    expect(status).not.toMatch(/TEMP B-TREE/)
    // A definition (and a status) reads only its entries of skein_runs_definition.
    const definition = plan({ definitionName: 'order', status: ['failed'] }, 10)
    expect(definition).toMatch(
      /USING INDEX skein_runs_definition \(definition_name=\? AND status=\?/,
    )
    expect(definition).not.toMatch(/TEMP B-TREE/)
    // A prefix is a range of the run id index (or the rowid walk); never an unindexed SCAN.
    expect(plan({ runIdPrefix: 'r' })).not.toMatch(/^SCAN skein_runs$/)
    expect(plan({ status: ['running'], runIdPrefix: 'r' })).toMatch(
      /USING (INDEX|INTEGER PRIMARY KEY)/,
    )
    db.close()
  })

  it('keeps the status index true although an append only writes the status when it changes', async () => {
    const path = freshPath(dir, 'status.db')
    const store = sqliteStore({ path })
    await store.append('r1', makeEnvelopes('r1', 1, 1), {
      expectedSeq: 0,
      meta: meta('running', 1),
    })
    await store.append('r1', makeEnvelopes('r1', 2, 1), {
      expectedSeq: 1,
      meta: meta('running', 2),
    })
    await store.append('r1', makeEnvelopes('r1', 3, 1), { expectedSeq: 2, meta: meta('failed', 3) })
    // Another connection commits a change: the writer's cached row must not hide it.
    const other = new Database(path)
    other.prepare("UPDATE skein_runs SET status = 'running' WHERE run_id = 'r1'").run()
    other.close()
    await store.append('r1', makeEnvelopes('r1', 4, 1), { expectedSeq: 3, meta: meta('failed', 4) })
    expect((await store.listSummaries({ limit: 5, status: ['failed'] })).runs).toEqual([
      { runId: 'r1', ...meta('failed', 4) },
    ])
    expect((await store.listSummaries({ limit: 5, status: ['running'] })).runs).toEqual([])
    await store.close()
  })
})
