import { createHash } from 'node:crypto'
import { existsSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { LeaseLostError } from '../core/errors.js'
import { loadDriver, makeDirectory, type SqliteDriver } from '../stores/sqlite/driver.js'
import { sqliteStore } from '../stores/sqlite/sqlite-store.js'
import { type CellStore, runNotFound } from './cell-store.js'

export interface SqliteCellsOptions {
  /** The directory of the cells: one file per run under `<dir>/runs/`. */
  dir: string
  /** The cells' `synchronous` (default 'full', see `sqliteStore`). */
  synchronous?: 'full' | 'normal'
  /**
   * How long opening a cell waits for another process that holds it (default 1000 ms), trying
   * again without blocking the event loop; then the request fails `503 LEASE_LOST`.
   */
  lockWaitMs?: number
}

/** A run id as a file name: itself when it is plainly safe, else a digest of it. */
export function cellFileName(runId: string): string {
  if (/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/.test(runId)) return `${runId}.sqlite`
  return `~${createHash('sha256').update(runId).digest('hex')}.sqlite`
}

/**
 * A better-sqlite3 constructor whose connections take the file's lock for good at open
 * (`locking_mode = EXCLUSIVE`, then an exclusive transaction): while a cell is open no other
 * process can read or write its file, and the OS lets the lock go when the process dies (even
 * by `kill -9`). In exclusive mode WAL keeps its index in memory: no `-shm` file, one fd less.
 */
function exclusiveDriver(base: SqliteDriver): SqliteDriver {
  return class extends (base as any) {
    constructor(path: string, options: { timeout: number }) {
      super(path, { ...options, timeout: 0 })
      try {
        this.pragma('locking_mode = EXCLUSIVE')
        this.exec('BEGIN EXCLUSIVE; COMMIT')
      } catch (error) {
        this.close()
        throw error
      }
    }
  } as unknown as SqliteDriver
}

const isBusy = (error: unknown): boolean => {
  const text = `${(error as { code?: unknown })?.code ?? ''} ${(error as Error)?.message ?? ''}`
  const cause = (error as { cause?: unknown })?.cause
  return /SQLITE_BUSY|database is locked/.test(text) || (cause !== undefined && isBusy(cause))
}

/**
 * The default cells with `dir`: one SQLite file per run (`<dir>/runs/<runId>.sqlite`), like a
 * Durable Object's private storage. A run is archived or deleted by its file (with the host
 * stopped, or the run's cell closed). An open cell holds its file's lock: two host processes on
 * one directory never run one cell twice; the second waits `lockWaitMs`, then answers 503.
 *
 * @example
 * const host = createActorHost({ modules, cells: sqliteCells({ dir: '.skein/actor' }) })
 */
export function sqliteCells(options: SqliteCellsOptions): CellStore {
  const runsDir = join(resolve(options.dir), 'runs')
  makeDirectory(runsDir)
  const lockWaitMs = options.lockWaitMs ?? 1000
  let driver: SqliteDriver | undefined
  const pathOf = (runId: string) => join(runsDir, cellFileName(runId))

  const openOnce = (path: string) => {
    driver ??= exclusiveDriver(loadDriver())
    const theDriver = driver
    return sqliteStore({
      path,
      synchronous: options.synchronous ?? 'full',
      driver: () => theDriver,
      onUpgrade: () => {},
    })
  }

  return {
    async open(runId, create, openOptions = {}) {
      const path = pathOf(runId)
      const waitMs = openOptions.waitMs ?? lockWaitMs
      if (!create && !existsSync(path)) throw runNotFound(runId)
      const started = Date.now()
      for (;;) {
        try {
          const store = openOnce(path)
          return { store, close: () => store.close() }
        } catch (error) {
          if (!isBusy(error)) throw error
          if (Date.now() - started >= waitMs) {
            throw new LeaseLostError(
              `run ${runId} is open in another actor host process on this directory: retry later`,
              { runId },
            )
          }
          await sleep(25)
        }
      }
    },
    async discard(runId) {
      const path = pathOf(runId)
      for (const file of [path, `${path}-wal`, `${path}-journal`]) rmSync(file, { force: true })
    },
  }
}
