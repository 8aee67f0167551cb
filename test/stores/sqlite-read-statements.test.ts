import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, describe, expect, it } from 'vitest'
import type { SqliteDriver } from '../../src/stores/sqlite/driver.js'
import { sqliteStore } from '../../src/stores/sqlite/index.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-read-statements-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A driver that records the SQL of every statement that reads `skein_events` rows. */
function recordingDriver(sources: string[]): SqliteDriver {
  class Recording extends Database {
    override prepare(source: string): any {
      const statement: any = super.prepare(source)
      if (!/^SELECT seq, id, ts, type\b/.test(source)) return statement
      const all = statement.all.bind(statement)
      statement.all = (...args: unknown[]) => {
        sources.push(source.replace(/\s+/g, ' '))
        return all(...args)
      }
      return statement
    }
  }
  return Recording as unknown as SqliteDriver
}

describe('sqlite event reads', () => {
  it('a read of the whole tail binds no LIMIT (a bound one costs more per call); a limited read does', async () => {
    const sources: string[] = []
    const store = sqliteStore({
      path: join(dir, 'reads.db'),
      driver: () => recordingDriver(sources),
    })
    try {
      await store.append('a', makeEnvelopes('a', 1, 5), { expectedSeq: 0 })
      expect((await store.read('a', { fromSeq: 3 })).map((e) => e.seq)).toEqual([3, 4, 5])
      expect((await store.read('a', { fromSeq: 6 })).map((e) => e.seq)).toEqual([])
      expect((await store.read('a', { fromSeq: 2, limit: 2 })).map((e) => e.seq)).toEqual([2, 3])
      expect((await store.read('a', { limit: 0 })).map((e) => e.seq)).toEqual([])
      expect(sources.map((sql) => /LIMIT/.test(sql))).toEqual([false, false, true, true])
    } finally {
      await store.close()
    }
  })
})
