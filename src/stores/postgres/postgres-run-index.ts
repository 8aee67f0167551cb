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
import type { PostgresStore } from './postgres-store.js'

export interface PostgresRunIndexOptions extends RunIndexOptions {
  /** The engine's Postgres store: the index is a table in its schema. */
  store: EventStore
}

const COLUMNS =
  'run_id, kind, definition_name, definition_version, status, tenant, created_at, updated_at, seq'

const toEntry = (r: any): RunIndexEntry => ({
  runId: r.run_id,
  kind: r.kind,
  definitionName: r.definition_name,
  definitionVersion: r.definition_version,
  status: r.status,
  tenant: r.tenant,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
  seq: Number(r.seq),
})

/**
 * The run index in the Postgres store's schema (`skein_run_index`), written by its projector:
 * a round's runs are folded in memory (`handle`) and upserted in one statement (`flush`); a row
 * only moves forward (`seq`), so a round handed over again, or by another host, changes nothing.
 *
 * @example
 * const store = postgresStore({ connectionString })
 * const index = postgresRunIndex({ store })
 * const engine = createEngine({ store, modules, projectors: [index.projector] })
 */
export function postgresRunIndex(options: PostgresRunIndexOptions): RunIndex {
  const q = (options.store as Partial<PostgresStore>).companion
  if (!q) throw new InvalidRequestError('postgresRunIndex: store must be a postgresStore')
  const s = q.schema
  // null: the run was deleted, its row goes.
  const pending = new Map<string, RunIndexEntry | null>()
  return {
    projector: defineProjector({
      name: options.name ?? 'run-index',
      async handle({ runId, events }) {
        let entry = pending.get(runId)
        if (!pending.has(runId)) {
          const [row] = await q.query(
            `read index row ${runId}`,
            `SELECT ${COLUMNS} FROM ${s}.skein_run_index WHERE run_id = $1`,
            [runId],
          )
          entry = row ? toEntry(row) : null
        }
        pending.set(runId, indexEvents(entry, events, options.tenant))
      },
      async flush() {
        const dropped = [...pending].filter(([, e]) => e === null).map(([runId]) => runId)
        const entries = [...pending.values()].filter((e) => e !== null)
        pending.clear()
        if (dropped.length > 0) {
          await q.query(
            'drop deleted runs from the run index',
            `DELETE FROM ${s}.skein_run_index WHERE run_id = ANY($1::text[])`,
            [dropped],
          )
        }
        if (entries.length === 0) return
        await q.query(
          'write the run index',
          `INSERT INTO ${s}.skein_run_index AS x (${COLUMNS})
            SELECT u.run_id, u.kind, u.definition_name, u.definition_version, u.status, u.tenant,
              u.created_at, u.updated_at, u.seq
            FROM json_to_recordset($1::json) AS u(run_id text, kind text, definition_name text,
              definition_version text, status text, tenant text, created_at bigint,
              updated_at bigint, seq bigint)
            ON CONFLICT (run_id) DO UPDATE SET kind = excluded.kind,
              definition_name = excluded.definition_name,
              definition_version = excluded.definition_version, status = excluded.status,
              tenant = excluded.tenant, created_at = excluded.created_at,
              updated_at = excluded.updated_at, seq = excluded.seq
            WHERE excluded.seq > x.seq`,
          [
            JSON.stringify(
              entries.map((e) => ({
                run_id: e.runId,
                kind: e.kind,
                definition_name: e.definitionName,
                definition_version: e.definitionVersion,
                status: e.status,
                tenant: e.tenant,
                created_at: e.createdAt,
                updated_at: e.updatedAt,
                seq: e.seq,
              })),
            ),
          ],
        )
      },
    }),
    async get(runId) {
      const [row] = await q.query(
        `read index row ${runId}`,
        `SELECT ${COLUMNS} FROM ${s}.skein_run_index WHERE run_id = $1`,
        [runId],
      )
      return row ? toEntry(row) : null
    },
    async list(query = {}) {
      const limit = indexLimit(query)
      const where: string[] = []
      const params: unknown[] = []
      if (query.status !== undefined) {
        params.push(query.status)
        where.push(`status = $${params.length}`)
      }
      if (query.tenant !== undefined) {
        params.push(query.tenant)
        where.push(`tenant = $${params.length}`)
      }
      if (query.cursor !== undefined) {
        const [createdAt, runId] = decodeIndexCursor(query.cursor)
        params.push(createdAt, runId)
        where.push(`(created_at, run_id) < ($${params.length - 1}, $${params.length})`)
      }
      params.push(limit + 1)
      const rows = await q.query(
        'list the run index',
        `SELECT ${COLUMNS} FROM ${s}.skein_run_index
          ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
          ORDER BY created_at DESC, run_id DESC LIMIT $${params.length}`,
        params,
      )
      const runs = rows.slice(0, limit).map(toEntry)
      const last = runs[runs.length - 1]
      return {
        runs,
        nextCursor: rows.length > limit ? encodeIndexCursor(last.createdAt, last.runId) : null,
      }
    },
  }
}
