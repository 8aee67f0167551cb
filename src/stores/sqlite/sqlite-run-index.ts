import { defineProjector } from '../../core/projector.js'
import {
  decodeIndexCursor,
  encodeIndexCursor,
  indexEvent,
  indexLimit,
  type RunIndex,
  type RunIndexEntry,
  type RunIndexOptions,
} from '../../core/run-index.js'
import { loadDriver, openDatabase, type SqliteDriver } from './driver.js'
import { storeError } from './group-commit.js'

export interface SqliteRunIndexOptions extends RunIndexOptions {
  /** The database file; the store's own file works (the index has a table of its own). */
  path: string
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
 * The run index in SQLite, written by its projector: one row per run (runId, kind,
 * definition, version, status, tenant, createdAt, updatedAt), for listing runs page by page
 * by status or tenant without folding them. A batch is one transaction, and events at or
 * below a row's seq are skipped, so a re-delivered batch changes nothing.
 *
 * @example
 * const index = sqliteRunIndex({ path: '.skein/runs.db' })
 * const engine = createEngine({ store, modules, projectors: [index.projector] })
 * const page = await index.list({ status: 'running', tenant: 'acme' })
 */
export function sqliteRunIndex(options: SqliteRunIndexOptions): RunIndex {
  const timeout = options.busyTimeoutMs ?? 5000
  const db = openDatabase((options.driver ?? loadDriver)(), options.path, timeout)
  try {
    db.pragma('journal_mode = WAL')
    db.pragma(`busy_timeout = ${timeout}`)
    db.exec(`
      CREATE TABLE IF NOT EXISTS skein_run_index (
        run_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        definition_name TEXT NOT NULL,
        definition_version TEXT NOT NULL,
        status TEXT NOT NULL,
        tenant TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        seq INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS skein_run_index_created
        ON skein_run_index (created_at DESC, run_id DESC);
    `)
  } catch (error) {
    db.close()
    throw storeError(`open run index ${options.path}`, error)
  }
  const get = db.prepare<[string], IndexRow>(
    `SELECT ${COLUMNS} FROM skein_run_index WHERE run_id = ?`,
  )
  const put = db.prepare<unknown[]>(
    `INSERT OR REPLACE INTO skein_run_index (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const apply = db.transaction((runId: string, events: Parameters<typeof indexEvent>[1][]) => {
    const row = get.get(runId)
    let entry = row ? toEntry(row) : undefined
    const before = entry
    for (const event of events) entry = indexEvent(entry, event, options.tenant)
    if (!entry || entry === before) return
    put.run(
      entry.runId,
      entry.kind,
      entry.definitionName,
      entry.definitionVersion,
      entry.status,
      entry.tenant,
      entry.createdAt,
      entry.updatedAt,
      entry.seq,
    )
  })
  let closed = false
  return {
    projector: defineProjector({
      name: options.name ?? 'run-index',
      handle({ runId, events }) {
        apply.immediate(runId, [...events])
      },
    }),
    async get(runId) {
      const row = get.get(runId)
      return row ? toEntry(row) : null
    },
    async list(query = {}) {
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
      db.close()
    },
  }
}
