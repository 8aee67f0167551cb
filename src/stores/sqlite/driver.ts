import { createRequire } from 'node:module'
import type BetterSqlite3 from 'better-sqlite3'
import { NotConfiguredError } from '../../core/errors.js'

/** The better-sqlite3 `Database` constructor. */
export type SqliteDriver = typeof BetterSqlite3
export type SqliteDatabase = BetterSqlite3.Database

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

/** Opens a database, turning a native-binding failure into an actionable error. */
export function openDatabase(driver: SqliteDriver, path: string, timeout: number): SqliteDatabase {
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
