import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { sqliteStore } from '../../src/stores/sqlite/index.js'
import { migrate } from '../../src/stores/sqlite/schema.js'
import { eventParams } from '../../src/stores/sqlite/statements.js'
import { freshPath } from '../support/temp-dirs.js'

// Feed positions are never reused (docs/projectors.md), with the events table's key drawn as the
// highest + 1 (decisions.md, "SQLite event positions without AUTOINCREMENT").
const dir = mkdtempSync(join(tmpdir(), 'skein-sqlite-kept-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const positions = async (store: ReturnType<typeof sqliteStore>) =>
  (await store.feed!.readAfter(0, 100)).map((e) => [e.position, e.event.runId, e.event.type])

const keepers = (path: string) => {
  const db = new Database(path, { readonly: true })
  try {
    return db.prepare('SELECT pos FROM skein_events WHERE run_no = 0').pluck().all()
  } finally {
    db.close()
  }
}

describe('sqlite event positions', () => {
  it('are not given again after the newest events are trimmed or deleted', async () => {
    const path = freshPath(dir, 'new.db')
    const store = sqliteStore({ path })
    try {
      await store.append('a', makeEnvelopes('a', 1, 2), { expectedSeq: 0 })
      await store.append('b', makeEnvelopes('b', 1, 2), { expectedSeq: 0 })
      // Trimming b to its tail deletes the file's newest event (position 4).
      expect(await store.trim!('b', 3)).toBe(2)
      expect(await store.feed!.headPosition()).toBe(4)
      await store.append('c', makeEnvelopes('c', 1, 1), { expectedSeq: 0 })
      // Deleting c (the newest again) records the deletion at the next position, 6.
      await store.deleteRun!('c', { at: 1, reason: 'request' })
      expect(await store.feed!.headPosition()).toBe(6)
      await store.append('d', makeEnvelopes('d', 1, 1), { expectedSeq: 0 })
      expect(await positions(store)).toEqual([
        [1, 'a', 'test.event'],
        [2, 'a', 'test.event'],
        [6, 'c', 'runtime.run.deleted'],
        [7, 'd', 'test.event'],
      ])
      // Reads and bounds never see a keeper; only the newest one is kept (position 6, now
      // below d's event: the next keeper replaces it).
      expect(await store.read('b')).toEqual([])
      expect(await store.bounds('b')).toEqual({ head: 3, tail: 2 })
      expect(keepers(path)).toEqual([6])
      await store.deleteRun!('d', { at: 2, reason: 'request' })
      expect(keepers(path)).toEqual([8])
      await store.append('e', makeEnvelopes('e', 1, 1), { expectedSeq: 0 })
      expect((await store.feed!.readAfter(7, 10)).map((e) => e.position)).toEqual([8, 9])
    } finally {
      await store.close()
    }
  })

  it('keep the highest position a schema-14 file gave when it is upgraded', async () => {
    const path = freshPath(dir, 'v13.db')
    const db = new Database(path)
    db.pragma('journal_mode = WAL')
    migrate(db, { target: 14 })
    const insert = db.prepare(
      `INSERT INTO skein_events (run_no, seq, id, ts, type, thread_id, origin, causation_id,
        effect_id, idempotency_key, event_key, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    db.transaction(() => {
      db.prepare("INSERT INTO skein_runs (run_id, tail) VALUES ('a', 2), ('b', 1)").run()
      for (const e of makeEnvelopes('a', 1, 2)) insert.run(...eventParams(1, e))
      for (const e of makeEnvelopes('b', 1, 1)) insert.run(...eventParams(2, e))
      // b deleted the way schema 14 did: its events gone, its record at the sequence's next.
      db.prepare('DELETE FROM skein_events WHERE run_no = 2').run()
      db.prepare("DELETE FROM skein_runs WHERE run_id = 'b'").run()
      db.prepare(
        "INSERT INTO skein_deletions (pos, run_id, tail, deleted_at, reason) VALUES (4, 'b', 1, 1, 'request')",
      ).run()
      db.prepare("UPDATE sqlite_sequence SET seq = 4 WHERE name = 'skein_events'").run()
    })()
    db.close()
    const store = sqliteStore({ path, onUpgrade: () => {} })
    try {
      expect(await store.feed!.headPosition()).toBe(4)
      await store.append('c', makeEnvelopes('c', 1, 1), { expectedSeq: 0 })
      expect(await positions(store)).toEqual([
        [1, 'a', 'test.event'],
        [2, 'a', 'test.event'],
        [4, 'b', 'runtime.run.deleted'],
        [5, 'c', 'test.event'],
      ])
      expect(await store.read('a')).toEqual(makeEnvelopes('a', 1, 2))
    } finally {
      await store.close()
    }
    const raw = new Database(path, { readonly: true })
    try {
      const sql = raw
        .prepare("SELECT sql FROM sqlite_master WHERE name = 'skein_events'")
        .pluck()
        .get() as string
      expect(sql).not.toMatch(/AUTOINCREMENT/)
      // The attribute trigger the rebuild recreated went with schema 16 (the store writes the
      // attributes: sqlite-run-attributes.test.ts).
      expect(
        raw.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").pluck().all(),
      ).toEqual(['skein_run_attributes_drop'])
    } finally {
      raw.close()
    }
  })
})
