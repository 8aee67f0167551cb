import { existsSync, mkdirSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, resolve } from 'node:path'
import { NotConfiguredError, StoreError } from '../../core/errors.js'
import { backoffAfter } from '../../core/retry.js'

// The parts of better-sqlite3 the store uses, declared structurally: the published types must
// check in an app that has neither better-sqlite3 (an optional peer) nor @types/better-sqlite3.
// `npm run typecheck` pins that the real package still fits them: test/stores/sqlite-*.test.ts
// and bench/sqlite-engine.ts hand better-sqlite3's own `Database` where these types are expected.

/** A prepared statement (`pluck()` changes what rows are; the type says it at `prepare`). */
export interface SqliteStatement<P extends unknown[] = unknown[], R = unknown> {
  run(...params: P): { changes: number; lastInsertRowid: number | bigint }
  get(...params: P): R | undefined
  all(...params: P): R[]
  iterate(...params: P): IterableIterator<R>
  pluck(toggle?: boolean): this
}

type ArgsOf<F extends (...args: any[]) => unknown> = F extends (...args: infer A) => unknown
  ? A
  : never

/** `db.transaction(fn)`: the wrapped function, and its `BEGIN IMMEDIATE` variant. */
export interface SqliteTransaction<F extends (...args: any[]) => unknown> {
  (...args: ArgsOf<F>): ReturnType<F>
  immediate(...args: ArgsOf<F>): ReturnType<F>
}

/** A better-sqlite3 `Database`, as far as the store uses one. */
export interface SqliteDatabase {
  readonly name: string
  readonly inTransaction: boolean
  prepare<P extends unknown[] = unknown[], R = unknown>(source: string): SqliteStatement<P, R>
  pragma(source: string, options?: { simple?: boolean }): unknown
  exec(source: string): unknown
  transaction<F extends (...args: any[]) => unknown>(fn: F): SqliteTransaction<F>
  close(): unknown
}

/** The better-sqlite3 `Database` constructor (its default export). */
export type SqliteDriver = new (path: string, options: { timeout: number }) => SqliteDatabase

const INSTALL = 'npm install better-sqlite3'

/**
 * Loads better-sqlite3 on first use: it is an optional peer dependency, so importing
 * `skein/sqlite` must not fail for users of the memory store, and a missing package must say
 * exactly what to install. `require` is injectable so the missing case can be tested.
 */
export function loadDriver(
  require: (id: string) => unknown = createRequire(import.meta.url),
): SqliteDriver {
  let mod: unknown
  try {
    mod = require('better-sqlite3')
  } catch (error) {
    if ((error as { code?: unknown })?.code === 'MODULE_NOT_FOUND') {
      throw new NotConfiguredError(
        `skein/sqlite needs the optional peer dependency better-sqlite3, which is not installed. Install it with: ${INSTALL}`,
        { package: 'better-sqlite3', install: INSTALL },
        { cause: error },
      )
    }
    throw error
  }
  return ((mod as { default?: unknown }).default ?? mod) as SqliteDriver
}

/**
 * Opens a database, creating its directory first (`.skein/runs.db` in a fresh checkout), and
 * turns a native-binding failure into an actionable error.
 */
export function openDatabase(driver: SqliteDriver, path: string, timeout: number): SqliteDatabase {
  // ':memory:' and '' (a private temporary database) name no file.
  if (path !== ':memory:' && path !== '') createDirectoryOf(path)
  try {
    return new driver(path, { timeout })
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    if (/bindings|NODE_MODULE_VERSION|\.node\b/.test(message)) {
      throw new NotConfiguredError(
        `better-sqlite3 is installed but its native module did not load (${message}). Rebuild it for this Node version with: npm rebuild better-sqlite3`,
        { package: 'better-sqlite3', install: 'npm rebuild better-sqlite3' },
        { cause: error },
      )
    }
    throw error
  }
}

function createDirectoryOf(path: string): void {
  makeDirectory(dirname(resolve(path)), `sqliteStore: cannot create the directory %s for ${path}`)
}

/**
 * `mkdir -p` that fails at once where a level cannot be made: Node 20's recursive `mkdirSync`
 * never returns under a parent it cannot create in (`/proc/nope`), spinning at 100 % CPU. Walks
 * up to the nearest existing ancestor (it must be a directory), then makes each missing level on
 * its own. `what` is the error's message, `%s` standing for the directory.
 */
export function makeDirectory(directory: string, what = 'cannot create the directory %s'): void {
  const missing: string[] = []
  let at = resolve(directory)
  while (!existsSync(at) && dirname(at) !== at) {
    missing.unshift(at)
    at = dirname(at)
  }
  try {
    if (!statSync(at).isDirectory()) throw new Error(`${at} is not a directory`)
    for (const level of missing) {
      try {
        mkdirSync(level)
      } catch (error) {
        // Another process made it meanwhile.
        if ((error as { code?: string }).code !== 'EEXIST' || !statSync(level).isDirectory()) {
          throw error
        }
      }
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    throw new StoreError(
      `${what.replace('%s', directory)}: ${message}`,
      { directory },
      { cause: error },
    )
  }
}

/**
 * `PRAGMA journal_mode = WAL`, retried while SQLite answers SQLITE_BUSY, for up to `timeoutMs`.
 * Changing a file's journal mode takes an exclusive lock, and where another process is opening
 * or converting the same file at that moment SQLite may answer busy at once, without calling
 * the busy handler (two actor hosts starting together on one directory did). Returns the mode.
 */
export function enableWal(db: SqliteDatabase, timeoutMs: number): unknown {
  const until = Date.now() + Math.max(0, timeoutMs)
  for (let tries = 1; ; tries++) {
    try {
      return db.pragma('journal_mode = WAL', { simple: true })
    } catch (error) {
      const code = (error as { code?: string })?.code
      if (!code?.startsWith('SQLITE_BUSY') || Date.now() >= until) throw error
      // Opening is synchronous (better-sqlite3): wait without spinning.
      const pause = backoffAfter(tries, { initialMs: 5, maxMs: 100 })
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pause)
    }
  }
}
