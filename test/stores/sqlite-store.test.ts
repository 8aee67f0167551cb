import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import Database from 'better-sqlite3'
import { makeEnvelopes } from 'skein/testing'
import { describeClaimStore, describeEventStore, describeLeaseStore } from 'skein/testing/vitest'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import {
  IdempotencyConflictError,
  NotConfiguredError,
  SeqConflictError,
  StoreError,
} from '../../src/core/errors.js'
import { loadDriver, type SqliteDriver } from '../../src/stores/sqlite/driver.js'
import { SCHEMA_VERSION, type SqliteStore, sqliteStore } from '../../src/stores/sqlite/index.js'
import { type Child, childWithin, exitWithin } from '../support/children.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-sqlite-'))
let files = 0
const freshPath = () => join(dir, `store-${++files}.db`)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describeEventStore('sqlite (synchronous full)', () => sqliteStore({ path: freshPath() }))
describeEventStore('sqlite (synchronous normal)', () =>
  sqliteStore({ path: freshPath(), synchronous: 'normal' }),
)
const twoStores = () => {
  const path = freshPath()
  const a = sqliteStore({ path })
  const b = sqliteStore({ path })
  return {
    a,
    b,
    close: async () => {
      await a.close()
      await b.close()
    },
  }
}
describeLeaseStore('sqlite (two stores on one file)', twoStores)
describeClaimStore('sqlite (two stores on one file)', twoStores)

const opened: Array<SqliteStore | Database.Database> = []
const open = (options: Parameters<typeof sqliteStore>[0]) => {
  const store = sqliteStore(options)
  opened.push(store)
  return store
}
const raw = (path: string) => {
  const db = new Database(path)
  opened.push(db)
  return db
}
afterEach(async () => {
  for (const handle of opened.splice(0).reverse()) await handle.close()
})

/** A driver whose statements can be counted or made to fail, for group-commit tests. */
function instrumentedDriver(hooks: {
  begins: number
  savepoints?: number
  /** SELECTs of a run's row. */
  rowReads?: number
  failInsertFor?: string
  /** How many COMMITs to fail (each throws before it runs). */
  failCommits?: number
}): SqliteDriver {
  class Instrumented extends Database {
    override prepare(source: string): any {
      const statement: any = super.prepare(source)
      const run = statement.run.bind(statement)
      if (source === 'BEGIN IMMEDIATE') {
        statement.run = (...args: unknown[]) => {
          hooks.begins++
          return run(...args)
        }
      } else if (source === 'COMMIT') {
        statement.run = (...args: unknown[]) => {
          if (hooks.failCommits) {
            hooks.failCommits--
            throw new Error('injected commit failure')
          }
          return run(...args)
        }
      } else if (source.startsWith('SELECT run_no, head, tail')) {
        const get = statement.get.bind(statement)
        statement.get = (...args: unknown[]) => {
          hooks.rowReads = (hooks.rowReads ?? 0) + 1
          return get(...args)
        }
      } else if (source.startsWith('SAVEPOINT')) {
        statement.run = (...args: unknown[]) => {
          hooks.savepoints = (hooks.savepoints ?? 0) + 1
          return run(...args)
        }
      } else if (source.startsWith('INSERT INTO skein_events')) {
        statement.run = (...args: unknown[]) => {
          // Rows (several per statement, 12 parameters each) carry the run's integer key; the
          // event id (third column) names the run.
          const params = args.flat()
          for (let i = 2; i < params.length; i += 12) {
            const eventId = String(params[i])
            if (hooks.failInsertFor && eventId.startsWith(`${hooks.failInsertFor}-e`)) {
              throw new Error('injected insert failure')
            }
          }
          return run(...args)
        }
      }
      return statement
    }
  }
  return Instrumented as unknown as SqliteDriver
}

describe('sqlite store', () => {
  it('keeps events, meta, trims and snapshots across a reopen', async () => {
    const path = freshPath()
    const first = sqliteStore({ path })
    const events = makeEnvelopes('r1', 1, 5, (seq) => ({ seq, text: 'ünïcode 🧵' }))
    const meta = {
      status: 'running' as const,
      kind: 'workflow',
      definitionName: 'demo',
      definitionVersion: '2',
      createdAt: 1,
      updatedAt: 2,
      nextDeadlineAt: 99,
    }
    await first.append('r1', events, { expectedSeq: 0, idempotencyKey: 'start', meta })
    await first.trim('r1', 3)
    await first.snapshots.save({ runId: 'r1', seq: 4, createdAt: 3, format: 1, data: { a: [1] } })
    await first.close()

    const again = open({ path })
    expect(await again.read('r1')).toStrictEqual(events.slice(2))
    expect(await again.bounds('r1')).toEqual({ head: 3, tail: 5 })
    expect(await again.listRuns()).toEqual(['r1'])
    expect((await again.listSummaries({ limit: 10 })).runs).toEqual([{ runId: 'r1', ...meta }])
    expect(await again.listRunsWithDeadlines()).toEqual([{ runId: 'r1', nextDeadlineAt: 99 }])
    expect((await again.snapshots.latest('r1'))?.data).toEqual({ a: [1] })
    const dup = again.append('r1', makeEnvelopes('r1', 6, 1), {
      expectedSeq: 5,
      idempotencyKey: 'start',
    })
    await expect(dup).rejects.toSatisfy(IdempotencyConflictError.is)
  })

  it('opens in WAL mode with the requested synchronous level and schema version', async () => {
    const pragmas: string[] = []
    class Recording extends Database {
      override pragma(source: string, options?: Database.PragmaOptions): unknown {
        pragmas.push(source)
        return super.pragma(source, options)
      }
    }
    const driver = () => Recording as unknown as SqliteDriver
    const full = open({ path: freshPath(), driver, busyTimeoutMs: 1234 })
    open({ path: freshPath(), driver, synchronous: 'normal' })
    expect(pragmas.filter((p) => /^(synchronous|busy_timeout|journal_mode) =/.test(p))).toEqual([
      'journal_mode = WAL',
      'synchronous = FULL',
      'busy_timeout = 1234',
      'journal_mode = WAL',
      'synchronous = NORMAL',
      'busy_timeout = 5000',
    ])
    await full.append('r', makeEnvelopes('r', 1, 1), { expectedSeq: 0 })
    const db = raw(full.path)
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    expect(() => sqliteStore({ path: freshPath(), synchronous: 'off' as any })).toThrow(/full/)
  })

  it('refuses a file written by a newer schema', () => {
    const path = freshPath()
    raw(path).pragma('user_version = 99')
    expect(() => sqliteStore({ path })).toThrow(/schema version 99 is newer/)
  })

  it('never forks a log across two connections on one file', async () => {
    const path = freshPath()
    const a = open({ path })
    const b = open({ path })
    await a.append(
      'r1',
      makeEnvelopes('r1', 1, 2, () => 'a'),
      { expectedSeq: 0 },
    )
    const lost = b.append(
      'r1',
      makeEnvelopes('r1', 1, 1, () => 'b'),
      { expectedSeq: 0 },
    )
    await expect(lost).rejects.toSatisfy(SeqConflictError.is)
    await b.append(
      'r1',
      makeEnvelopes('r1', 3, 1, () => 'b'),
      { expectedSeq: 2 },
    )
    expect((await a.read('r1')).map((e) => e.payload)).toEqual(['a', 'a', 'b'])
    await expect(a.append('r1', makeEnvelopes('r1', 3, 1), { expectedSeq: 2 })).rejects.toSatisfy(
      SeqConflictError.is,
    )
  })

  it('fails an append with a StoreError when another connection holds the write lock', async () => {
    const path = freshPath()
    const store = open({ path, busyTimeoutMs: 20 })
    const holder = raw(path)
    holder.exec('BEGIN IMMEDIATE')
    const error = await store
      .append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 })
      .catch((e) => e)
    holder.exec('ROLLBACK')
    expect(StoreError.is(error)).toBe(true)
    expect(error.details).toEqual({ sqliteCode: 'SQLITE_BUSY' })
    expect(await store.tail('r1')).toBe(0)
    await store.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 })
  })

  it('group-commits one tick of appends and fails only the conflicting ones', async () => {
    const hooks = { begins: 0, failInsertFor: 'boom' }
    const store = open({ path: freshPath(), driver: () => instrumentedDriver(hooks) })
    await store.append('taken', makeEnvelopes('taken', 1, 1), {
      expectedSeq: 0,
      idempotencyKey: 'k',
    })
    const seen: string[] = []
    store.subscribe('r0', () => seen.push('r0'))
    hooks.begins = 0

    const calls = Array.from({ length: 50 }, (_, i) =>
      store.append(`r${i}`, makeEnvelopes(`r${i}`, 1, 1 + (i % 4)), { expectedSeq: 0 }),
    )
    const stale = store.append('taken', makeEnvelopes('taken', 1, 1), { expectedSeq: 0 })
    const dupKey = store.append('taken', makeEnvelopes('taken', 2, 1), {
      expectedSeq: 1,
      idempotencyKey: 'k',
    })
    const boom = store.append('boom', makeEnvelopes('boom', 1, 3), {
      expectedSeq: 0,
      idempotencyKey: 'b',
      meta: {
        status: 'running',
        kind: 'k',
        definitionName: 'd',
        definitionVersion: '1',
        createdAt: 0,
        updatedAt: 0,
        nextDeadlineAt: 1,
      },
    })
    // Same run twice in one group: applied in call order inside the transaction.
    const next = store.append('taken', makeEnvelopes('taken', 2, 2), { expectedSeq: 1 })
    const after = store.append('taken', makeEnvelopes('taken', 4, 1), { expectedSeq: 3 })

    const results = await Promise.allSettled([...calls, stale, dupKey, boom, next, after])
    // The failed write undid the fast path; the group was redone with a savepoint per request.
    expect(hooks.begins).toBe(2)
    expect(results.slice(0, 50).every((r) => r.status === 'fulfilled')).toBe(true)
    const reasons = results.slice(50).map((r) => (r.status === 'rejected' ? r.reason : 'ok'))
    expect(SeqConflictError.is(reasons[0])).toBe(true)
    expect(IdempotencyConflictError.is(reasons[1])).toBe(true)
    expect(StoreError.is(reasons[2]) && /injected insert failure/.test(reasons[2].message)).toBe(
      true,
    )
    expect(reasons.slice(3)).toEqual(['ok', 'ok'])
    expect(seen).toEqual(['r0'])

    for (let i = 0; i < 50; i++) expect(await store.tail(`r${i}`)).toBe(1 + (i % 4))
    expect(await store.tail('taken')).toBe(4)
    expect(await store.bounds('boom')).toEqual({ head: 0, tail: 0 })
    expect(await store.listRunsWithDeadlines()).toEqual([])
    // The failed call's savepoint took its idempotency key with it.
    hooks.failInsertFor = ''
    await store.append('boom', makeEnvelopes('boom', 1, 1), { expectedSeq: 0, idempotencyKey: 'b' })
  })

  it('writes a group without savepoints when nothing fails, and a lone failed write alone', async () => {
    const hooks = { begins: 0, savepoints: 0, failInsertFor: 'boom' }
    const store = open({ path: freshPath(), driver: () => instrumentedDriver(hooks) })
    hooks.begins = 0
    const conflict = store.append('x', makeEnvelopes('x', 6, 1), { expectedSeq: 5 })
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.append(`r${i}`, makeEnvelopes(`r${i}`, 1, 3), { expectedSeq: 0 }),
      ),
    )
    expect(SeqConflictError.is(await conflict.catch((e) => e))).toBe(true)
    expect({ begins: hooks.begins, savepoints: hooks.savepoints }).toEqual({
      begins: 1,
      savepoints: 0,
    })
    const lone = await store
      .append('boom', makeEnvelopes('boom', 1, 2), { expectedSeq: 0, idempotencyKey: 'k' })
      .catch((e) => e)
    expect(StoreError.is(lone) && /injected insert failure/.test(lone.message)).toBe(true)
    expect(hooks.savepoints).toBe(0)
    expect(await store.tail('boom')).toBe(0)
    hooks.failInsertFor = ''
    await store.append('boom', makeEnvelopes('boom', 1, 2), { expectedSeq: 0, idempotencyKey: 'k' })
    expect(await store.tail('boom')).toBe(2)
    for (let i = 0; i < 20; i++) expect(await store.tail(`r${i}`)).toBe(3)
  })

  it('takes a run at expected tail 0 to be new without reading its row, and refuses one that exists', async () => {
    const path = freshPath()
    const hooks = { begins: 0, savepoints: 0, rowReads: 0 }
    const a = open({ path })
    const b = open({ path, driver: () => instrumentedDriver(hooks) })
    await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        b.append(`new${i}`, makeEnvelopes(`new${i}`, 1, 2), { expectedSeq: 0 }),
      ),
    )
    expect(hooks.rowReads).toBe(0)
    // Runs another connection created: b has never seen them, so it takes them to be new.
    await a.append(
      'taken',
      makeEnvelopes('taken', 1, 2, () => 'a'),
      { expectedSeq: 0 },
    )
    await a.append(
      'taken2',
      makeEnvelopes('taken2', 1, 1, () => 'a'),
      { expectedSeq: 0 },
    )
    const alone = await b
      .append(
        'taken',
        makeEnvelopes('taken', 1, 1, () => 'b'),
        { expectedSeq: 0 },
      )
      .catch((e) => e)
    expect(SeqConflictError.is(alone) && alone.details).toMatchObject({ tail: 2 })
    const grouped = [
      b.append(
        'taken2',
        makeEnvelopes('taken2', 1, 1, () => 'b'),
        { expectedSeq: 0 },
      ),
      b.append(
        'fresh',
        makeEnvelopes('fresh', 1, 1, () => 'b'),
        { expectedSeq: 0 },
      ),
    ]
    expect(SeqConflictError.is(await grouped[0].catch((e) => e))).toBe(true)
    await grouped[1]
    expect((await a.read('taken')).map((e) => e.payload)).toEqual(['a', 'a'])
    expect((await a.read('taken2')).map((e) => e.payload)).toEqual(['a'])
    expect((await a.read('fresh')).map((e) => e.payload)).toEqual(['b'])
  })

  it('forgets the tail a failed commit wrote: the next append sees the log as committed', async () => {
    const hooks = { begins: 0, failCommits: 0 }
    const store = open({ path: freshPath(), driver: () => instrumentedDriver(hooks) })
    await store.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 })
    hooks.failCommits = 1
    const failed = await store
      .append('r1', makeEnvelopes('r1', 2, 2), { expectedSeq: 1 })
      .catch((e) => e)
    expect(StoreError.is(failed) && /injected commit failure/.test(failed.message)).toBe(true)
    await store.append('r1', makeEnvelopes('r1', 2, 1), { expectedSeq: 1 })
    expect((await store.read('r1')).map((e) => e.seq)).toEqual([1, 2])
  })

  it('keeps the deadline index right as a run sets, keeps, clears and resets its deadline', async () => {
    const path = freshPath()
    const store = open({ path })
    const meta = (nextDeadlineAt: number | null, status: 'running' | 'completed' = 'running') => ({
      status,
      kind: 'workflow',
      definitionName: 'd',
      definitionVersion: '1',
      createdAt: 1,
      updatedAt: 2,
      nextDeadlineAt,
    })
    const steps: Array<[number | null, Array<{ runId: string; nextDeadlineAt: number }>]> = [
      [5, [{ runId: 'r1', nextDeadlineAt: 5 }]],
      [5, [{ runId: 'r1', nextDeadlineAt: 5 }]],
      [0, [{ runId: 'r1', nextDeadlineAt: 0 }]],
      [null, []],
      [null, []],
      [7, [{ runId: 'r1', nextDeadlineAt: 7 }]],
    ]
    let tail = 0
    for (const [at, expected] of steps) {
      await store.append('r1', makeEnvelopes('r1', tail + 1, 1), {
        expectedSeq: tail,
        meta: meta(at),
      })
      tail++
      expect(await store.listRunsWithDeadlines()).toEqual(expected)
    }
    const [summary] = (await store.listSummaries({ limit: 10 })).runs
    expect(summary).toMatchObject({ runId: 'r1', nextDeadlineAt: 7, updatedAt: 2 })
    await store.close()
    expect(await open({ path }).listRunsWithDeadlines()).toEqual([
      { runId: 'r1', nextDeadlineAt: 7 },
    ])
  })

  it('group-commits appends from separate callbacks of one event-loop phase', async () => {
    // Each I/O or timer callback drains its own microtasks: a microtask flush would commit
    // every HTTP request or due timer alone. The flush waits for the loop phase to end.
    const hooks = { begins: 0 }
    const store = open({ path: freshPath(), driver: () => instrumentedDriver(hooks) })
    hooks.begins = 0
    const appends = await new Promise<Promise<void>[]>((resolve) => {
      const started: Promise<void>[] = []
      for (let i = 0; i < 10; i++) {
        setImmediate(() => {
          started.push(store.append(`r${i}`, makeEnvelopes(`r${i}`, 1, 2), { expectedSeq: 0 }))
          if (started.length === 10) resolve(started)
        })
      }
    })
    await Promise.all(appends)
    expect(hooks.begins).toBe(1)
    for (let i = 0; i < 10; i++) expect(await store.tail(`r${i}`)).toBe(2)
  })

  it('commits a lone append at the next loop turn: no timer, no window waiting for company', async () => {
    // One run at a time, every step's commit sits between two fsyncs on the run's critical
    // path (docs/performance.md, "Where a one-at-a-time run's time goes"): the flush queued by
    // the append runs before an immediate queued after it, and its promise settles there.
    const store = open({ path: freshPath() })
    await store.append('warm', makeEnvelopes('warm', 1, 1), { expectedSeq: 0 })
    let settled = false
    const append = store.append('a', makeEnvelopes('a', 1, 2), { expectedSeq: 0 })
    append.then(() => {
      settled = true
    })
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(settled).toBe(true)
    await append
  })

  it('settles group-committed appends only after the commit is visible to others', async () => {
    const path = freshPath()
    const store = open({ path })
    const reader = open({ path })
    const visible: number[] = []
    store.subscribe('a', () => {
      visible.push(0)
      // The listener runs after COMMIT: a second connection already sees the whole group.
      reader.tail('b').then((tail) => visible.push(tail))
    })
    await Promise.all([
      store.append('a', makeEnvelopes('a', 1, 1), { expectedSeq: 0 }),
      store.append('b', makeEnvelopes('b', 1, 2), { expectedSeq: 0 }),
    ])
    await reader.tail('b')
    expect(visible).toEqual([0, 2])
  })

  it('isolates a throwing listener from the append and the other listeners', async () => {
    const errors: unknown[] = []
    const store = open({ path: freshPath(), onListenerError: (e) => errors.push(e) })
    const got: number[] = []
    store.subscribe('r1', () => {
      throw new Error('listener bug')
    })
    store.subscribe('r1', (events) => got.push(events.length))
    await store.append('r1', makeEnvelopes('r1', 1, 2), { expectedSeq: 0 })
    expect(got).toEqual([2])
    expect(errors).toHaveLength(1)
  })

  it('commits queued appends on close and rejects calls afterwards', async () => {
    const path = freshPath()
    const store = sqliteStore({ path })
    const pending = store.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 })
    await store.close()
    await pending
    await store.close()
    await expect(store.read('r1')).rejects.toSatisfy(StoreError.is)
    await expect(
      store.append('r1', makeEnvelopes('r1', 2, 1), { expectedSeq: 1 }),
    ).rejects.toSatisfy(StoreError.is)
    await expect(store.snapshots.list('r1')).rejects.toSatisfy(StoreError.is)
    expect(await open({ path }).tail('r1')).toBe(1)
  })

  it('names better-sqlite3 and the install command when the package is missing', () => {
    const missing = (id: string) => {
      throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' })
    }
    let error: any
    try {
      sqliteStore({ path: freshPath(), driver: () => loadDriver(missing) })
    } catch (e) {
      error = e
    }
    expect(NotConfiguredError.is(error)).toBe(true)
    expect(error.message).toContain('better-sqlite3')
    expect(error.message).toContain('npm install better-sqlite3')
    const broken = () => {
      throw new Error('something else')
    }
    expect(() => loadDriver(broken)).toThrow('something else')
    expect(loadDriver()).toBe(Database)
  })
})

// A writer in another process: 'race' appends `count` single events to run "shared",
// re-reading the tail on every conflict; 'ack' appends batches forever and prints each
// acknowledged tail, to be killed with SIGKILL ('ack-deferred': the same with deferSync).
const WORKER = `
import { sqliteStore } from ${JSON.stringify(pathToFileURL(resolve('src/stores/sqlite/index.ts')).href)}
const [path, mode, label, count] = process.argv.slice(2)
const store = sqliteStore({ path })
const event = (seq, payload) => ({ id: label + seq, runId: 'shared', seq, ts: 0, type: 't', payload, threadId: null, origin: 'runtime' })
if (mode === 'race') {
  for (let done = 0; done < Number(count); ) {
    const tail = await store.tail('shared')
    try {
      await store.append('shared', [event(tail + 1, label)], { expectedSeq: tail })
      done++
    } catch (error) {
      if (error.code !== 'SEQ_CONFLICT') throw error
    }
  }
  await store.close()
} else {
  const deferSync = mode === 'ack-deferred'
  for (let tail = 0; ; tail += 3) {
    await store.append('shared', [1, 2, 3].map((i) => event(tail + i, 'x'.repeat(500))), { expectedSeq: tail, durability: deferSync ? 'deferred' : 'immediate' })
    process.stdout.write('ack ' + (tail + 3) + '\\n')
  }
}
`

/** A writer process; its stderr is kept for a failure message (and still shown). */
function worker(args: string[]): Child {
  const script = join(dir, 'worker.mjs')
  writeFileSync(script, WORKER)
  const proc = spawn(
    process.execPath,
    ['--conditions=skein-source', '--import', 'tsx', script, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let err = ''
  proc.stderr.on('data', (d) => {
    err += d
    process.stderr.write(d)
  })
  return { name: `the ${args[1]} writer ${args[2]}`, proc, output: () => err }
}

const exited = async (child: Child) => (await exitWithin(child, 20_000)).code

describe('sqlite store across processes', () => {
  it('two processes racing on one run never fork the log', async () => {
    const path = freshPath()
    sqliteStore({ path }).close()
    const children = ['a', 'b'].map((label) => worker([path, 'race', label, '150']))
    expect(await Promise.all(children.map(exited))).toEqual([0, 0])
    const events = await open({ path }).read('shared')
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1))
    expect(events.filter((e) => e.payload === 'a')).toHaveLength(150)
  })

  it.each([
    ['acknowledged append', 'ack'],
    ['deferSync append (not fsynced: a process crash still loses none)', 'ack-deferred'],
  ])('keeps every %s when the writer is killed with SIGKILL', async (_label, mode) => {
    const path = freshPath()
    const child = worker([path, mode, 'k'])
    let acked = 0
    let buffer = ''
    await childWithin(
      '150 acknowledged events',
      child,
      new Promise<void>((done, fail) => {
        child.proc.on('exit', (code) => fail(new Error(`writer exited early with ${code}`)))
        child.proc.stdout!.on('data', (chunk: Buffer) => {
          buffer += chunk.toString()
          const lines = buffer.split('\n')
          buffer = lines.pop()!
          for (const line of lines) acked = Math.max(acked, Number(line.slice(4)))
          if (acked >= 150) done()
        })
      }),
      20_000,
    )
    child.proc.kill('SIGKILL')
    await exited(child)
    const store = open({ path })
    const tail = await store.tail('shared')
    expect(tail).toBeGreaterThanOrEqual(acked)
    expect((await store.read('shared')).map((e) => e.seq)).toEqual(
      Array.from({ length: tail }, (_, i) => i + 1),
    )
  })
})

describe('sqlite subscribe across processes', () => {
  it('delivers events another connection appended, each once and in order', async () => {
    const path = freshPath()
    const a = open({ path })
    const b = open({ path, changePollMs: 10 })
    const seen: number[] = []
    const unsubscribe = b.subscribe('r1', (events) => seen.push(...events.map((e) => e.seq)))
    await a.append('r1', makeEnvelopes('r1', 1, 2), { expectedSeq: 0 })
    await b.append('r1', makeEnvelopes('r1', 3, 1), { expectedSeq: 2 })
    await a.append('r1', makeEnvelopes('r1', 4, 3), { expectedSeq: 3 })
    for (let i = 0; i < 500 && seen.length < 6; i++) await new Promise((r) => setTimeout(r, 10))
    expect(seen).toEqual([1, 2, 3, 4, 5, 6])
    unsubscribe()
    await a.append('r1', makeEnvelopes('r1', 7, 1), { expectedSeq: 6 })
    await new Promise((r) => setTimeout(r, 50))
    expect(seen).toEqual([1, 2, 3, 4, 5, 6])
  })
})
