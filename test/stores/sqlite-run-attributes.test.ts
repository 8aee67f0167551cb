import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { EventEnvelope } from 'skein'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { sqliteStore } from '../../src/stores/sqlite/index.js'
import { migrate } from '../../src/stores/sqlite/schema.js'
import { freshPath } from '../support/temp-dirs.js'

// The store writes skein_run_attributes itself for the events that carry attributes, with the
// trigger's statements (decisions.md, "SQLite run attributes are written by the store, not a
// trigger").
const dir = mkdtempSync(join(tmpdir(), 'skein-sqlite-attributes-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const event = (runId: string, seq: number, type: string, payload: unknown): EventEnvelope => ({
  ...makeEnvelopes(runId, seq, 1)[0],
  type,
  payload: payload as EventEnvelope['payload'],
})
const started = (runId: string, attributes: Record<string, unknown>) =>
  event(runId, 1, 'runtime.run.started', { input: { attributes: 'not these' }, attributes })
const changed = (runId: string, seq: number, attributes: Record<string, unknown>) =>
  event(runId, seq, 'runtime.run.attributes', { attributes })

function rows(path: string) {
  const db = new Database(path, { readonly: true })
  try {
    return db
      .prepare(
        `SELECT r.run_id AS runId, a.name, a.value, a.is_bool AS isBool FROM skein_run_attributes a
          JOIN skein_runs r USING (run_no) ORDER BY r.run_id, a.name`,
      )
      .all()
  } finally {
    db.close()
  }
}

const triggers = (path: string) => {
  const db = new Database(path, { readonly: true })
  try {
    return db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
      .pluck()
      .all()
  } finally {
    db.close()
  }
}

describe('sqlite run attributes', () => {
  it('are written by the store from starts and changes, with no trigger on the events', async () => {
    const path = freshPath(dir, 'new.db')
    const store = sqliteStore({ path })
    try {
      // One group commit: two runs' starts, a plain event and a change in the same turn.
      await Promise.all([
        store.append('a', [started('a', { customer: 'c-1', amount: 12, vip: true })], {
          expectedSeq: 0,
        }),
        store.append('b', [started('b', { customer: 'c-2' }), ...makeEnvelopes('b', 2, 1)], {
          expectedSeq: 0,
        }),
      ])
      await store.append('a', [changed('a', 2, { amount: 13, vip: null })], { expectedSeq: 1 })
      expect(rows(path)).toEqual([
        { runId: 'a', name: 'amount', value: 13, isBool: 0 },
        { runId: 'a', name: 'customer', value: 'c-1', isBool: 0 },
        { runId: 'b', name: 'customer', value: 'c-2', isBool: 0 },
      ])
      expect(triggers(path)).toEqual(['skein_run_attributes_drop'])
    } finally {
      await store.close()
    }
  })

  it('are written when a group is redone request by request', async () => {
    const path = freshPath(dir, 'redo.db')
    const store = sqliteStore({ path })
    try {
      await store.append('taken', makeEnvelopes('taken', 1, 1), { expectedSeq: 0 })
      await store.close()
      // A second handle has not seen `taken`: it takes the run to be new, its row's INSERT
      // fails, and the group is redone with a savepoint per request.
      const again = sqliteStore({ path })
      try {
        const results = await Promise.allSettled([
          again.append('c', [started('c', { customer: 'c-3' })], { expectedSeq: 0 }),
          again.append('taken', makeEnvelopes('taken', 1, 1), { expectedSeq: 0 }),
        ])
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected'])
        expect(rows(path)).toEqual([{ runId: 'c', name: 'customer', value: 'c-3', isBool: 0 }])
      } finally {
        await again.close()
      }
    } catch (error) {
      await store.close().catch(() => {})
      throw error
    }
  })

  it('drop the trigger of a schema-15 file; what it wrote stays, and changes go on', async () => {
    const path = freshPath(dir, 'v15.db')
    const old = new Database(path)
    old.pragma('journal_mode = WAL')
    migrate(old, { target: 15 })
    // A start written on schema 15: the trigger writes its attributes.
    old.exec(`INSERT INTO skein_runs (run_id, tail) VALUES ('d', 1);
      INSERT INTO skein_events (run_no, seq, id, ts, type, origin, payload)
        VALUES (1, 1, 'd-e1', 0, 'runtime.run.started', 'runtime',
          '{"attributes":{"customer":"c-4","amount":1}}');`)
    old.close()
    expect(triggers(path)).toEqual(['skein_run_attributes_drop', 'skein_run_attributes_set'])
    const store = sqliteStore({ path })
    try {
      await store.append('d', [changed('d', 2, { amount: null, tier: 'gold' })], { expectedSeq: 1 })
      expect(triggers(path)).toEqual(['skein_run_attributes_drop'])
      expect(rows(path)).toEqual([
        { runId: 'd', name: 'customer', value: 'c-4', isBool: 0 },
        { runId: 'd', name: 'tier', value: 'gold', isBool: 0 },
      ])
    } finally {
      await store.close()
    }
  })
})
