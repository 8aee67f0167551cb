import type { FeedEntry, ProjectionFeed, ProjectorCheckpoint } from '../../core/ports.js'
import { type EventRow, rowToEnvelope } from '../shared/event-rows.js'

type Read = (action: string, text: string, params: unknown[]) => Promise<any[]>

const toCheckpoint = (row: any): ProjectorCheckpoint => ({
  name: row.name,
  position: Number(row.position),
  owner: row.owner,
  expiresAt: Number(row.expires_at),
  updatedAt: Number(row.updated_at),
})

const CHECKPOINT = 'name, position, owner, expires_at, updated_at'

/**
 * The Postgres store's projection feed: positions come from `skein_feed_pos`, drawn under a
 * transaction-scoped lock so they follow commit order (schema.ts, migration v4); checkpoints
 * live in `skein_projectors`, claimed and saved by single statements (atomic across hosts).
 */
export function postgresFeed(s: string, read: Read) {
  const sql = {
    readAfter: `SELECT e.pos, r.run_id, e.seq, e.id, e.ts, e.type, e.thread_id, e.origin,
        e.causation_id, e.effect_id, e.idempotency_key, e.event_key, e.payload
      FROM ${s}.skein_events e JOIN ${s}.skein_runs r ON r.run_no = e.run_no
      WHERE e.pos > $1 ORDER BY e.pos LIMIT $2`,
    head: `SELECT greatest(coalesce((SELECT max(pos) FROM ${s}.skein_events), 0),
        (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ${s}.skein_feed_pos)) AS head`,
    checkpoint: `SELECT ${CHECKPOINT} FROM ${s}.skein_projectors WHERE name = $1`,
    claim: `INSERT INTO ${s}.skein_projectors AS p (name, owner, expires_at) VALUES ($1, $2, $3)
      ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
      WHERE p.owner IS NULL OR p.owner = $2 OR p.expires_at <= $4
      RETURNING ${CHECKPOINT}`,
    save: `UPDATE ${s}.skein_projectors SET position = greatest(position, $1),
        updated_at = CASE WHEN $1 > position THEN $2 ELSE updated_at END
      WHERE name = $3 AND owner = $4 RETURNING name`,
    release: `UPDATE ${s}.skein_projectors SET owner = NULL, expires_at = 0
      WHERE name = $1 AND owner = $2`,
    coveredSeq: `SELECT coalesce(max(e.seq), 0) AS seq FROM ${s}.skein_events e
      WHERE e.run_no = (SELECT run_no FROM ${s}.skein_runs WHERE run_id = $1) AND e.pos <= $2`,
  }
  const watchers = new Set<() => void>()
  const feed: ProjectionFeed = {
    async readAfter(after, limit) {
      const rows = await read('read the projection feed', sql.readAfter, [after, limit])
      return rows.map(
        (row: EventRow & { pos: string; run_id: string }): FeedEntry => ({
          position: Number(row.pos),
          event: rowToEnvelope(row.run_id, row),
        }),
      )
    },
    async headPosition() {
      const [row] = await read('read the feed head', sql.head, [])
      return Number(row?.head ?? 0)
    },
    watch(listener) {
      watchers.add(listener)
      return () => {
        watchers.delete(listener)
      }
    },
    async checkpoint(name) {
      const [row] = await read(`read checkpoint ${name}`, sql.checkpoint, [name])
      return row ? toCheckpoint(row) : null
    },
    async claim(name, owner, now, expiresAt) {
      const [row] = await read(`claim projector ${name}`, sql.claim, [name, owner, expiresAt, now])
      return row ? toCheckpoint(row) : null
    },
    async saveCheckpoint(name, owner, position, now) {
      const rows = await read(`save checkpoint ${name}`, sql.save, [position, now, name, owner])
      return rows.length > 0
    },
    async release(name, owner) {
      await read(`release projector ${name}`, sql.release, [name, owner])
    },
    async coveredSeq(runId, position) {
      const [row] = await read(`covered seq of ${runId}`, sql.coveredSeq, [runId, position])
      return Number(row?.seq ?? 0)
    },
  }
  return {
    feed,
    committed(): void {
      for (const watcher of [...watchers]) {
        try {
          watcher()
        } catch {}
      }
    },
  }
}
