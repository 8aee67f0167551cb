import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { sqliteRegistry } from '../../src/actor/sqlite-registry.js'
import { IdempotencyConflictError } from '../../src/core/errors.js'
import { SCHEMA_VERSION, sqliteRunIndex, sqliteStore } from '../../src/stores/sqlite/index.js'
import { migrate } from '../../src/stores/sqlite/schema.js'
import { eventParams } from '../../src/stores/sqlite/statements.js'
import { freshPath } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-sqlite-migrate-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const insertV1 = `INSERT INTO skein_events (run_id, seq, id, ts, type, thread_id, origin,
  causation_id, effect_id, idempotency_key, event_key, payload)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

/** A file as a schema-1 skein left it: written with the v1 layout, rows by hand. */
function schemaOneFile(path: string) {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  migrate(db, { target: 1 })
  const insert = db.prepare(insertV1)
  const runs = db.prepare(
    `INSERT INTO skein_runs (run_id, head, tail, status, kind, definition_name,
      definition_version, created_at, updated_at, next_deadline_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const events = {
    // Created second but listed first: runs keep their creation (rowid) order.
    b: makeEnvelopes('b', 1, 3, (seq) => ({ seq, text: 'ünïcode 🧵' })),
    a: makeEnvelopes('a', 1, 5),
    orphan: makeEnvelopes('orphan', 1, 2),
  }
  events.a[1] = { ...events.a[1], causationId: 'c', effectId: 'e', idempotencyKey: 'k', key: 'x' }
  db.transaction(() => {
    runs.run('b', 1, 3, 'running', 'workflow', 'demo', '1', 10, 11, 500)
    // Run a was trimmed below seq 3.
    runs.run('a', 3, 5, 'completed', 'workflow', 'demo', '1', 20, 21, null)
    // Version 1 kept the run id where version 2 keeps the run number; the other columns match.
    for (const e of [...events.b, ...events.a.slice(2), ...events.orphan]) {
      insert.run(e.runId, ...eventParams(0, e).slice(1))
    }
    db.prepare('INSERT INTO skein_idempotency (run_id, key, seq) VALUES (?, ?, ?)').run('b', 'k', 3)
    db.prepare(
      `INSERT INTO skein_snapshots (run_id, seq, created_at, format, data) VALUES (?, ?, ?, ?, ?)`,
    ).run('a', 4, 30, 2, '{"s":1}')
  })()
  db.close()
  return events
}

describe('sqlite schema migration', () => {
  it('upgrades a schema-1 file in place: every event, bound, key, deadline and snapshot kept', async () => {
    const path = freshPath(dir, 'v1.db')
    const events = schemaOneFile(path)
    const upgrades: unknown[] = []
    const store = sqliteStore({ path, onUpgrade: (u) => upgrades.push(u) })
    try {
      expect(upgrades).toEqual([{ path, from: 1, to: SCHEMA_VERSION }])
      expect(await store.read('b')).toStrictEqual(events.b)
      expect(await store.read('a')).toStrictEqual(events.a.slice(2))
      expect(await store.read('orphan')).toStrictEqual(events.orphan)
      expect(await store.bounds('a')).toEqual({ head: 3, tail: 5 })
      expect(await store.bounds('orphan')).toEqual({ head: 1, tail: 2 })
      expect(await store.listRuns()).toEqual(['b', 'a', 'orphan'])
      // Newest first: b was created before a.
      const { runs } = await store.listSummaries({ limit: 10 })
      expect(runs.map((s) => [s.runId, s.status])).toEqual([
        ['a', 'completed'],
        ['b', 'running'],
      ])
      expect(await store.listRunsWithDeadlines()).toEqual([{ runId: 'b', nextDeadlineAt: 500 }])
      expect((await store.snapshots.latest('a'))?.data).toEqual({ s: 1 })
      const dup = store.append('b', makeEnvelopes('b', 4, 1), {
        expectedSeq: 3,
        idempotencyKey: 'k',
      })
      await expect(dup).rejects.toSatisfy(IdempotencyConflictError.is)
      // Logs continue where they were, for old runs and new ones alike.
      await store.append('a', makeEnvelopes('a', 6, 2), { expectedSeq: 5 })
      await store.append('c', makeEnvelopes('c', 1, 1), { expectedSeq: 0 })
      expect((await store.read('a')).map((e) => e.seq)).toEqual([3, 4, 5, 6, 7])
      expect(await store.listRuns()).toEqual(['b', 'a', 'orphan', 'c'])
    } finally {
      await store.close()
    }
    // Told once per file, never for a new one.
    const fresh = freshPath(dir, 'fresh.db')
    await sqliteStore({ path: fresh, onUpgrade: (u) => upgrades.push(u) }).close()
    await sqliteStore({ path, onUpgrade: (u) => upgrades.push(u) }).close()
    expect(upgrades).toHaveLength(1)
    const db = new Database(path, { readonly: true })
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
      const tables = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .pluck()
        .all()
      expect(tables).toEqual([
        'skein_claims',
        'skein_deletions',
        'skein_events',
        'skein_flow',
        'skein_flow_debounce',
        'skein_flow_rate',
        'skein_idempotency',
        'skein_projectors',
        'skein_run_attributes',
        'skein_run_index',
        'skein_runs',
        'skein_schedule_mark',
        'skein_schedules',
        'skein_snapshots',
        'skein_wait_urls',
        'skein_worker_tasks',
        'sqlite_sequence',
      ])
      expect(db.prepare('SELECT count(*) FROM skein_events').pluck().get()).toBe(11)
    } finally {
      db.close()
    }
  })

  it('leaves a schema-1 file untouched when the upgrade cannot finish', () => {
    const path = freshPath(dir, 'v1-locked.db')
    schemaOneFile(path)
    const holder = new Database(path)
    holder.exec('BEGIN IMMEDIATE')
    try {
      expect(() => sqliteStore({ path, busyTimeoutMs: 20, onUpgrade: () => {} })).toThrow(
        /locked|busy/i,
      )
    } finally {
      holder.exec('ROLLBACK')
      holder.close()
    }
    const db = new Database(path, { readonly: true })
    expect(db.pragma('user_version', { simple: true })).toBe(1)
    expect(db.prepare('SELECT count(*) FROM skein_events').pluck().get()).toBe(8)
    db.close()
  })
})

describe('companion tables come with the schema', () => {
  it('adopts a run index table a v7 file got from an index that created it at open', async () => {
    const path = freshPath(dir, 'v7-index.db')
    const db = new Database(path)
    migrate(db, { target: 7 })
    // What sqliteRunIndex ran when it opened, before the table joined the migrations.
    db.exec(`CREATE TABLE skein_run_index (run_id TEXT PRIMARY KEY, kind TEXT NOT NULL,
      definition_name TEXT NOT NULL, definition_version TEXT NOT NULL, status TEXT NOT NULL,
      tenant TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, seq INTEGER NOT NULL);
      CREATE INDEX skein_run_index_created ON skein_run_index (created_at DESC, run_id DESC);
      INSERT INTO skein_run_index VALUES ('r1', 'workflow', 'd', 'v1', 'running', NULL, 1, 2, 3);`)
    db.close()
    const store = sqliteStore({ path, onUpgrade: () => {} })
    try {
      const index = sqliteRunIndex({ store })
      expect(await index.get('r1')).toMatchObject({ runId: 'r1', status: 'running', seq: 3 })
    } finally {
      await store.close()
    }
    const after = new Database(path, { readonly: true })
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    after.close()
  })

  it('moves snapshots to a rowid table at version 14, every row kept and still unique by (run, seq)', async () => {
    const path = freshPath(dir, 'v13-snapshots.db')
    const db = new Database(path)
    db.pragma('journal_mode = WAL')
    migrate(db, { target: 13 })
    expect(
      db.prepare("SELECT sql FROM sqlite_master WHERE name = 'skein_snapshots'").pluck().get(),
    ).toMatch(/WITHOUT ROWID/)
    const insert = db.prepare(
      `INSERT INTO skein_snapshots (run_id, seq, created_at, format, data) VALUES (?, ?, ?, ?, ?)`,
    )
    const big = JSON.stringify({ text: 'x'.repeat(3000) })
    insert.run('a', 3, 30, 2, '{"s":3}')
    insert.run('a', 7, 70, 2, big)
    insert.run('b', 2, 20, 2, '{"s":2}')
    db.close()
    const store = sqliteStore({ path, onUpgrade: () => {} })
    try {
      expect(await store.snapshots.list('a')).toEqual([3, 7])
      expect(await store.snapshots.latest('a')).toMatchObject({
        seq: 7,
        createdAt: 70,
        data: JSON.parse(big),
      })
      expect(await store.snapshots.latest('a', 6)).toMatchObject({ seq: 3, data: { s: 3 } })
      expect(await store.snapshots.latest('b')).toMatchObject({ seq: 2, data: { s: 2 } })
      // A save at a seq already stored replaces that row (INSERT OR REPLACE on the unique key).
      await store.snapshots.save({
        runId: 'b',
        seq: 2,
        createdAt: 21,
        format: 2,
        data: { s: 'again' },
      })
      await store.snapshots.prune('b', 5)
      expect(await store.snapshots.list('b')).toEqual([2])
      expect(await store.snapshots.latest('b')).toMatchObject({
        createdAt: 21,
        data: { s: 'again' },
      })
    } finally {
      await store.close()
    }
    const after = new Database(path, { readonly: true })
    const sql = after
      .prepare("SELECT sql FROM sqlite_master WHERE name = 'skein_snapshots'")
      .pluck()
    expect(sql.get()).not.toMatch(/WITHOUT ROWID/)
    expect(after.prepare('SELECT count(*) FROM skein_snapshots').pluck().get()).toBe(3)
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    after.close()
  })

  it('migrates a run index file of its own like a store file', async () => {
    const path = freshPath(dir, 'index-only.db')
    const index = sqliteRunIndex({ path })
    expect((await index.list()).runs).toEqual([])
    await index.close?.()
    const db = new Database(path, { readonly: true })
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    db.close()
  })

  it("numbers the actor registry file's own migrations, adopting a table made at open", async () => {
    const old = freshPath(dir, 'old-registry.db')
    const db = new Database(old)
    db.exec(`CREATE TABLE actor_runs (run_no INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE,
      owner TEXT, kind TEXT NOT NULL, definition_name TEXT NOT NULL, definition_version TEXT,
      created_at INTEGER NOT NULL, wake_at INTEGER);
      INSERT INTO actor_runs (run_id, kind, definition_name, created_at) VALUES ('r1', 'workflow', 'd', 5);`)
    db.close()
    for (const path of [old, freshPath(dir, 'new-registry.db')]) {
      const registry = sqliteRegistry({ path })
      await registry.record({
        runId: 'r2',
        owner: null,
        kind: 'workflow',
        definitionName: 'd',
        definitionVersion: null,
        createdAt: 6,
      })
      const { runs } = await registry.list()
      expect(runs.map((r) => r.runId)).toEqual(path === old ? ['r1', 'r2'] : ['r2'])
      await registry.close?.()
      const raw = new Database(path, { readonly: true })
      expect(raw.pragma('user_version', { simple: true })).toBe(1)
      raw.close()
    }
  })
})
