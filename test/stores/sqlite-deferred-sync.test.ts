import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { SqliteDriver } from '../../src/stores/sqlite/driver.js'
import { createGroupCommit } from '../../src/stores/sqlite/group-commit.js'
import { type SqliteStore, sqliteStore } from '../../src/stores/sqlite/index.js'
import { migrate } from '../../src/stores/sqlite/schema.js'
import { prepareStatements } from '../../src/stores/sqlite/statements.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-deferred-'))
let files = 0
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const opened: SqliteStore[] = []
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close()
})

/**
 * A driver that records the connection's sync level (1 NORMAL, 2 FULL) at every COMMIT and
 * every lease release (an autocommitted statement).
 */
function levelRecordingDriver(levels: number[]): SqliteDriver {
  class Recording extends Database {
    override prepare(source: string): any {
      const statement: any = super.prepare(source)
      if (source !== 'COMMIT' && !/^UPDATE skein_runs SET lease_expires_at = 0/.test(source))
        return statement
      const run = statement.run.bind(statement)
      statement.run = (...args: unknown[]) => {
        levels.push(this.pragma('synchronous', { simple: true }) as number)
        return run(...args)
      }
      return statement
    }
  }
  return Recording as unknown as SqliteDriver
}

function open(synchronous: 'full' | 'normal' = 'full') {
  const levels: number[] = []
  const store = sqliteStore({
    path: join(dir, `d${++files}.db`),
    synchronous,
    driver: () => levelRecordingDriver(levels),
  })
  opened.push(store)
  return { store, levels }
}

const NORMAL = 1
const FULL = 2

describe('sqlite deferSync appends', () => {
  it('a group of deferSync appends commits without fsync; the next commit is FULL again', async () => {
    const { store, levels } = open()
    await Promise.all([
      store.append('a', makeEnvelopes('a', 1, 2), { expectedSeq: 0, durability: 'deferred' }),
      store.append('b', makeEnvelopes('b', 1, 2), { expectedSeq: 0, durability: 'deferred' }),
    ])
    await store.append('a', makeEnvelopes('a', 3, 1), { expectedSeq: 2 })
    expect(levels).toEqual([NORMAL, FULL])
    expect((await store.read('a')).map((e) => e.seq)).toEqual([1, 2, 3])
    expect((await store.read('b')).map((e) => e.seq)).toEqual([1, 2])
  })

  it('a group with one append that is not deferred is fsynced as a whole', async () => {
    const { store, levels } = open()
    await Promise.all([
      store.append('a', makeEnvelopes('a', 1, 1), { expectedSeq: 0, durability: 'deferred' }),
      store.append('b', makeEnvelopes('b', 1, 1), { expectedSeq: 0 }),
    ])
    expect(levels).toEqual([FULL])
  })

  it('a deferSync append that conflicts is rejected like any other and the level is restored', async () => {
    const { store, levels } = open()
    await store.append('a', makeEnvelopes('a', 1, 1), { expectedSeq: 0 })
    await expect(
      store.append('a', makeEnvelopes('a', 1, 1), { expectedSeq: 0, durability: 'deferred' }),
    ).rejects.toMatchObject({ code: 'SEQ_CONFLICT' })
    await store.append('a', makeEnvelopes('a', 2, 1), { expectedSeq: 1 })
    expect(levels).toEqual([FULL, NORMAL, FULL])
  })

  it('a store opened with synchronous normal commits everything at NORMAL', async () => {
    const { store, levels } = open('normal')
    await store.append('a', makeEnvelopes('a', 1, 1), { expectedSeq: 0, durability: 'deferred' })
    await store.append('a', makeEnvelopes('a', 2, 1), { expectedSeq: 1 })
    expect(levels).toEqual([NORMAL, NORMAL])
    await store.flush()
  })

  it('a lease release commits without fsync (a lost release only lets the lease expire)', async () => {
    const { store, levels } = open()
    const leases = store.leases!
    await store.append('a', makeEnvelopes('a', 1, 1), { expectedSeq: 0 })
    await leases.renewLease('a', {
      owner: 'o',
      epoch: 1,
      expiresAt: Date.now() + 60_000,
      now: Date.now(),
    })
    await leases.releaseLease('a', 'o', 1)
    await store.append('a', makeEnvelopes('a', 2, 1), { expectedSeq: 1 })
    expect(levels).toEqual([FULL, NORMAL, FULL])
    expect((await leases.readLease('a'))?.expiresAt).toBe(0)
  })

  it('sync resolves with or without deferred appends, and fails once the store is closed', async () => {
    const { store } = open()
    await store.flush()
    await store.append('a', makeEnvelopes('a', 1, 1), { expectedSeq: 0, durability: 'deferred' })
    await store.flush()
    await store.flush()
    await store.close()
    await expect(store.flush()).rejects.toMatchObject({ code: 'STORE_ERROR' })
  })
})

describe('sqlite group commit bookkeeping of deferred groups', () => {
  const setup = () => {
    const db = new Database(join(dir, `g${++files}.db`))
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    migrate(db)
    const group = createGroupCommit(db, prepareStatements(db), () => {}, undefined, true)
    const append = (runId: string, from: number, deferSync: boolean) =>
      new Promise<void>((resolve, reject) =>
        group.enqueue({
          runId,
          events: makeEnvelopes(runId, from, 1),
          options: { expectedSeq: from - 1, durability: deferSync ? 'deferred' : 'immediate' },
          resolve,
          reject,
        }),
      )
    return { db, group, append }
  }

  it('a FULL commit that writes covers earlier deferred groups; one that writes nothing does not', async () => {
    const { db, group, append } = setup()
    await append('a', 1, true)
    expect(group.unsynced()).toBeGreaterThan(0)
    // Rejected by its tail check: the FULL commit writes nothing, so nothing is fsynced.
    await expect(append('a', 1, false)).rejects.toMatchObject({ code: 'SEQ_CONFLICT' })
    expect(group.unsynced()).toBeGreaterThan(0)
    await append('a', 2, false)
    expect(group.unsynced()).toBe(0)
    db.close()
  })

  it('markSynced covers only the groups committed before the sync began', async () => {
    const { db, group, append } = setup()
    await append('a', 1, true)
    const mark = group.unsynced()
    await append('a', 2, true)
    group.markSynced(mark)
    expect(group.unsynced()).toBeGreaterThan(mark)
    group.markSynced(group.unsynced())
    expect(group.unsynced()).toBe(0)
    db.close()
  })
})
