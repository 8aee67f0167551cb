import { InvalidRequestError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import type { EventStore } from '../core/ports.js'
import type { PostgresStore } from '../stores/postgres/postgres-store.js'
import {
  positionAfter,
  positionBefore,
  type RegisteredRun,
  type RunRegistry,
  registryValues,
} from './run-registry.js'

/**
 * The run registry as a table in a Postgres store's schema (`skein_actor_runs`), shared by every
 * actor host on that schema (docs/operations.md, "Actor hosts and run registries"). Wake times are kept like `sqliteRegistry`'s,
 * though hosts on `sharedCells` do not use them: their deadlines wait in the store's run index.
 *
 * @example
 * const store = postgresStore({ connectionString })
 * const host = createActorHost({ modules, cells: sharedCells({ store }), registry: postgresRegistry({ store }) })
 */
export function postgresRegistry(options: { store: EventStore }): RunRegistry {
  const q = (options.store as Partial<PostgresStore>).companion
  if (!q) throw new InvalidRequestError('postgresRegistry: store must be a postgresStore')
  const s = q.schema
  const query = q.query
  return {
    async record(run) {
      await query(
        'record a run',
        `INSERT INTO ${s}.skein_actor_runs
          (run_id, owner, kind, definition_name, definition_version, created_at, wake_at)
          VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (run_id) DO NOTHING`,
        registryValues(run),
      )
    },
    async forget(runId) {
      await query('forget a run', `DELETE FROM ${s}.skein_actor_runs WHERE run_id = $1`, [runId])
    },
    async setVersion(runId, definitionVersion) {
      await query(
        'record a run version',
        `UPDATE ${s}.skein_actor_runs SET definition_version = $1 WHERE run_id = $2`,
        [definitionVersion, runId],
      )
    },
    async list({ cursor, limit = 100, order = 'oldest' } = {}) {
      const size = Math.max(1, Math.min(limit, 1000))
      const rows = await query(
        'list runs',
        order === 'newest'
          ? `SELECT * FROM ${s}.skein_actor_runs WHERE run_no < $1 ORDER BY run_no DESC LIMIT $2`
          : `SELECT * FROM ${s}.skein_actor_runs WHERE run_no > $1 ORDER BY run_no LIMIT $2`,
        [order === 'newest' ? positionBefore(cursor) : positionAfter(cursor), size],
      )
      const runs = rows.map(
        (r: any): RegisteredRun => ({
          runId: r.run_id,
          owner: (r.owner ?? null) as Json | null,
          kind: r.kind,
          definitionName: r.definition_name,
          definitionVersion: r.definition_version,
          createdAt: Number(r.created_at),
        }),
      )
      const last = rows.at(-1)
      return rows.length === size && last ? { runs, nextCursor: String(last.run_no) } : { runs }
    },
    async setWake(runId, at) {
      await query(
        'set a wake time',
        `UPDATE ${s}.skein_actor_runs SET wake_at = $1 WHERE run_id = $2`,
        [at, runId],
      )
    },
    async dueBy(at, limit) {
      const rows = await query(
        'list due runs',
        `SELECT run_id, wake_at FROM ${s}.skein_actor_runs
          WHERE wake_at IS NOT NULL AND wake_at <= $1 ORDER BY wake_at LIMIT $2`,
        [at, limit],
      )
      return rows.map((r: any) => ({ runId: r.run_id, wakeAt: Number(r.wake_at) }))
    },
  }
}
