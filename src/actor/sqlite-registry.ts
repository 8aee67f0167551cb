import type { Json } from '../core/json.js'
import {
  enableWal,
  loadDriver,
  openDatabase,
  type SqliteDatabase,
} from '../stores/sqlite/driver.js'
import { applyMigrations } from '../stores/sqlite/schema.js'
import {
  positionAfter,
  positionBefore,
  type RegisteredRun,
  type RunRegistry,
  registryValues,
} from './run-registry.js'

/**
 * The registry file's own numbered migrations (`PRAGMA user_version`), applied like the
 * store's. Never edit a shipped one: append. v1 says IF NOT EXISTS because registries before
 * it created the table when they opened.
 */
const REGISTRY_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE IF NOT EXISTS actor_runs (
    run_no INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    owner TEXT,
    kind TEXT NOT NULL,
    definition_name TEXT NOT NULL,
    definition_version TEXT,
    created_at INTEGER NOT NULL,
    wake_at INTEGER
  );
  CREATE INDEX IF NOT EXISTS actor_runs_wake ON actor_runs (wake_at) WHERE wake_at IS NOT NULL;
  `,
]

interface Row {
  run_no: number
  run_id: string
  owner: string | null
  kind: string
  definition_name: string
  definition_version: string | null
  created_at: number
}

/**
 * The default registry of an actor host with `dir`: one SQLite table (`registry.db` in the
 * directory), shared by every host process on that directory (SQLite's own locking). A record
 * is durable before the start that made it runs (synchronous=FULL); wake times survive a
 * process crash, and after a power loss `POST /operations/deadlines/rescan` rebuilds them.
 *
 * @example
 * const host = createActorHost({ modules, dir: '.skein/actor', registry: sqliteRegistry({ path: '.skein/registry.db' }) })
 */
export function sqliteRegistry(options: { path: string }): RunRegistry {
  const db: SqliteDatabase = openDatabase(loadDriver(), options.path, 5000)
  enableWal(db, 5000)
  db.pragma('synchronous = FULL')
  applyMigrations(db, REGISTRY_MIGRATIONS)
  const insert = db.prepare<[string, string | null, string, string, string | null, number, number]>(
    `INSERT INTO actor_runs (run_id, owner, kind, definition_name, definition_version, created_at, wake_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
  )
  const remove = db.prepare<[string]>('DELETE FROM actor_runs WHERE run_id = ?')
  const setVersion = db.prepare<[string, string]>(
    'UPDATE actor_runs SET definition_version = ? WHERE run_id = ?',
  )
  const page = db.prepare<[number, number], Row>(
    'SELECT * FROM actor_runs WHERE run_no > ? ORDER BY run_no LIMIT ?',
  )
  const newestPage = db.prepare<[number, number], Row>(
    'SELECT * FROM actor_runs WHERE run_no < ? ORDER BY run_no DESC LIMIT ?',
  )
  const setWake = db.prepare<[number | null, string]>(
    'UPDATE actor_runs SET wake_at = ? WHERE run_id = ?',
  )
  const due = db.prepare<[number, number], { run_id: string; wake_at: number }>(
    'SELECT run_id, wake_at FROM actor_runs WHERE wake_at IS NOT NULL AND wake_at <= ? ORDER BY wake_at LIMIT ?',
  )
  return {
    async record(run) {
      // A new run's cell is due at once (the host opens it; a crash leaves "open me").
      insert.run(...registryValues(run), run.createdAt)
    },
    async forget(runId) {
      remove.run(runId)
    },
    async setVersion(runId, definitionVersion) {
      setVersion.run(definitionVersion, runId)
    },
    async list({ cursor, limit = 100, order = 'oldest' } = {}) {
      const size = Math.max(1, Math.min(limit, 1000))
      const rows =
        order === 'newest'
          ? newestPage.all(positionBefore(cursor), size)
          : page.all(positionAfter(cursor), size)
      const runs = rows.map(
        (r): RegisteredRun => ({
          runId: r.run_id,
          owner: r.owner === null ? null : (JSON.parse(r.owner) as Json),
          kind: r.kind,
          definitionName: r.definition_name,
          definitionVersion: r.definition_version,
          createdAt: r.created_at,
        }),
      )
      const last = rows.at(-1)
      return rows.length === size && last ? { runs, nextCursor: String(last.run_no) } : { runs }
    },
    async setWake(runId, at) {
      // Wake marks commit without their own fsync: a process crash loses none (WAL), and the
      // next record's FULL commit makes them durable. After a power loss, rescan (docs).
      db.pragma('synchronous = NORMAL')
      try {
        setWake.run(at, runId)
      } finally {
        db.pragma('synchronous = FULL')
      }
    },
    async dueBy(at, limit) {
      return due.all(at, limit).map((r) => ({ runId: r.run_id, wakeAt: r.wake_at }))
    },
    async close() {
      db.close()
    },
  }
}
