import { InvalidRequestError } from '../../core/errors.js'
import type { EventStore } from '../../core/ports.js'
import { defineProjector } from '../../core/projector.js'
import {
  decodeIndexCursor,
  encodeIndexCursor,
  indexEvents,
  indexLimit,
  type RunIndex,
  type RunIndexEntry,
  type RunIndexOptions,
} from '../../core/run-index.js'
import {
  enableWal,
  loadDriver,
  openDatabase,
  type SqliteDatabase,
  type SqliteDriver,
} from './driver.js'
import { storeError } from './group-commit.js'
import { migrate } from './schema.js'
import type { SqliteStore } from './sqlite-store.js'
import { unsyncedWrite } from './unsynced-write.js'

export interface SqliteRunIndexOptions extends RunIndexOptions {
  /**
   * The engine's SQLite store: the index lives in its file and writes through its connection
   * (recommended: no lock waits between two connections of one process, and a round's write
   * skips its own fsync like the checkpoint after it, which it precedes in the same WAL).
   */
  store?: EventStore
  /** Or a database file of its own, opened on a second connection. */
  path?: string
  busyTimeoutMs?: number
  driver?: () => SqliteDriver
}

interface IndexRow {
  run_id: string
  kind: string
  definition_name: string
  definition_version: string
  status: RunIndexEntry['status']
  tenant: string | null
  created_at: number
  updated_at: number
  seq: number
}

const toEntry = (r: IndexRow): RunIndexEntry => ({
  runId: r.run_id,
  kind: r.kind,
  definitionName: r.definition_name,
  definitionVersion: r.definition_version,
  status: r.status,
  tenant: r.tenant,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  seq: r.seq,
})

const COLUMNS =
  'run_id, kind, definition_name, definition_version, status, tenant, created_at, updated_at, seq'

/**
 * A run index file of its own, on a second connection: a Skein SQLite file like the store's,
 * migrated the same way (its table is one of the store schema's), so it may also be the
 * store's own file opened by another process.
 */
function openIndexFile(options: SqliteRunIndexOptions, timeout: number): SqliteDatabase {
  const db = openDatabase((options.driver ?? loadDriver)(), options.path as string, timeout)
  try {
    enableWal(db, timeout)
    db.pragma(`busy_timeout = ${timeout}`)
    migrate(db)
  } catch (error) {
    db.close()
    throw storeError(`open run index in ${options.path}`, error)
  }
  return db
}

/**
 * The run index in SQLite, written by its projector: one row per run (runId, kind,
 * definition, version, status, tenant, createdAt, updatedAt), for listing runs page by page
 * by status or tenant without folding them. A batch is one transaction, and events at or
 * below a row's seq are skipped, so a re-delivered batch changes nothing.
 *
 * @example
 * const store = sqliteStore({ path: '.skein/runs.db' })
 * const index = sqliteRunIndex({ store })
 * const engine = createEngine({ store, modules, projectors: [index.projector] })
 * const page = await index.list({ status: 'running', tenant: 'acme' })
 */
export function sqliteRunIndex(options: SqliteRunIndexOptions): RunIndex {
  const shared = options.store ? (options.store as Partial<SqliteStore>).companion : undefined
  if (options.store && !shared) {
    throw new InvalidRequestError('sqliteRunIndex: store must be an open sqliteStore')
  }
  if (!shared && typeof options.path !== 'string') {
    throw new InvalidRequestError('sqliteRunIndex: pass { store } (a sqliteStore) or { path }')
  }
  const timeout = options.busyTimeoutMs ?? 5000
  const db = shared ? shared.db : openIndexFile(options, timeout)
  const guard = shared ? () => shared.guard() : () => {}
  const relaxed = shared?.relaxed ?? false
  const get = db.prepare<[string], IndexRow>(
    `SELECT ${COLUMNS} FROM skein_run_index WHERE run_id = ?`,
  )
  const put = db.prepare<unknown[]>(
    `INSERT OR REPLACE INTO skein_run_index (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  // A round's runs are folded into `pending` by `handle` and written in one transaction by
  // `flush` (one fsync per round, not per run).
  const drop = db.prepare<[string]>('DELETE FROM skein_run_index WHERE run_id = ?')
  // null: the run was deleted, its row goes.
  const pending = new Map<string, RunIndexEntry | null>()
  const writeAll = db.transaction((rows: Array<[string, RunIndexEntry | null]>) => {
    for (const [runId, e] of rows) {
      if (e === null) {
        drop.run(runId)
        continue
      }
      put.run(
        e.runId,
        e.kind,
        e.definitionName,
        e.definitionVersion,
        e.status,
        e.tenant,
        e.createdAt,
        e.updatedAt,
        e.seq,
      )
    }
  })
  let closed = false
  return {
    projector: defineProjector({
      name: options.name ?? 'run-index',
      handle({ runId, events }) {
        guard()
        const row = pending.has(runId) ? undefined : get.get(runId)
        const before = pending.has(runId) ? pending.get(runId) : row ? toEntry(row) : null
        pending.set(runId, indexEvents(before, events, options.tenant))
      },
      flush() {
        guard()
        const entries = [...pending]
        pending.clear()
        if (entries.length === 0) return
        unsyncedWrite(db, relaxed, () => writeAll.immediate(entries))
      },
    }),
    async get(runId) {
      guard()
      const row = get.get(runId)
      return row ? toEntry(row) : null
    },
    async list(query = {}) {
      guard()
      const limit = indexLimit(query)
      const where: string[] = []
      const params: unknown[] = []
      if (query.status !== undefined) {
        where.push('status = ?')
        params.push(query.status)
      }
      if (query.tenant !== undefined) {
        where.push('tenant = ?')
        params.push(query.tenant)
      }
      if (query.cursor !== undefined) {
        const [createdAt, runId] = decodeIndexCursor(query.cursor)
        where.push('(created_at < ? OR (created_at = ? AND run_id < ?))')
        params.push(createdAt, createdAt, runId)
      }
      const rows = db
        .prepare<unknown[], IndexRow>(
          `SELECT ${COLUMNS} FROM skein_run_index ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
            ORDER BY created_at DESC, run_id DESC LIMIT ?`,
        )
        .all(...params, limit + 1)
      const runs = rows.slice(0, limit).map(toEntry)
      const last = runs[runs.length - 1]
      return {
        runs,
        nextCursor: rows.length > limit ? encodeIndexCursor(last.createdAt, last.runId) : null,
      }
    },
    async close() {
      if (closed) return
      closed = true
      // A shared connection is the store's to close.
      if (!shared) db.close()
    },
  }
}
