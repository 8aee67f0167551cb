import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  enableWal,
  loadDriver,
  openDatabase,
  type SqliteDatabase,
} from '../../src/stores/sqlite/driver.js'
import { freshPath } from '../support/temp-dirs.js'

// Opening a SQLite file in WAL mode while another process opens or converts it: SQLite may
// answer SQLITE_BUSY at once, without its busy handler (two actor hosts starting together on
// one directory failed so: "database is locked" from the registry's journal_mode pragma).
// `enableWal` retries for up to the busy timeout.

const dir = mkdtempSync(join(tmpdir(), 'skein-wal-busy-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A database whose journal-mode pragma answers busy `times` times, then as the real one. */
function busyAtFirst(db: SqliteDatabase, times: number, code = 'SQLITE_BUSY') {
  let calls = 0
  const pragma = db.pragma.bind(db)
  return {
    calls: () => calls,
    db: new Proxy(db, {
      get(target, key) {
        if (key !== 'pragma') return Reflect.get(target, key)
        return (source: string, options?: { simple?: boolean }) => {
          calls++
          if (calls <= times) throw Object.assign(new Error('database is locked'), { code })
          return pragma(source, options)
        }
      },
    }),
  }
}

describe('enableWal', () => {
  it('retries a busy answer and turns WAL on', () => {
    const real = openDatabase(loadDriver(), freshPath(dir, 'a.db'), 1000)
    const busy = busyAtFirst(real, 3)
    try {
      expect(enableWal(busy.db, 5000)).toBe('wal')
      expect(busy.calls()).toBe(4)
    } finally {
      real.close()
    }
  })

  it('gives up with the busy error once the timeout has passed', () => {
    const real = openDatabase(loadDriver(), freshPath(dir, 'b.db'), 1000)
    const busy = busyAtFirst(real, 1_000_000, 'SQLITE_BUSY_RECOVERY')
    try {
      const started = Date.now()
      expect(() => enableWal(busy.db, 50)).toThrow('database is locked')
      expect(Date.now() - started).toBeGreaterThanOrEqual(50)
      expect(busy.calls()).toBeGreaterThan(1)
    } finally {
      real.close()
    }
  })

  it('does not retry other errors', () => {
    const real = openDatabase(loadDriver(), freshPath(dir, 'c.db'), 1000)
    const busy = busyAtFirst(real, 1, 'SQLITE_CORRUPT')
    try {
      expect(() => enableWal(busy.db, 5000)).toThrow('database is locked')
      expect(busy.calls()).toBe(1)
    } finally {
      real.close()
    }
  })
})
