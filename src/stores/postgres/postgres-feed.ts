import type { FeedEntry, ProjectionFeed, ProjectorCheckpoint } from '../../core/ports.js'
import { projectorClaimName } from '../../core/projector.js'
import { RUN_DELETED } from '../../core/run-deletion.js'
import { type EventRow, rowToEnvelope } from '../shared/event-rows.js'

type Read = (action: string, text: string, params: unknown[]) => Promise<any[]>

const toCheckpoint = (row: any): ProjectorCheckpoint => ({
  name: row.name,
  position: Number(row.position),
  updatedAt: Number(row.updated_at),
})

const CHECKPOINT = 'name, position, updated_at'

/**
 * The Postgres store's projection feed: positions come from `skein_feed_pos`, drawn under a
 * transaction-scoped lock so they follow commit order (schema.ts, migration v4); checkpoints
 * live in `skein_projectors`, each save one statement that checks the projector's claim
 * (`skein_claims`), atomic across hosts.
 */
export function postgresFeed(s: string, read: Read) {
  const sql = {
    // Events and deletion records (docs/data-lifecycle.md) in one order, each side bounded.
    // A page stops once the payloads before an entry reach $3 bytes (ProjectionFeed.readAfter):
    // the running sum is taken from stored sizes, so what is cut off never leaves the server.
    readAfter: `SELECT * FROM (SELECT page.*, octet_length(page.payload) AS bytes,
        sum(octet_length(page.payload)) OVER (ORDER BY page.pos) AS upto FROM (
      (SELECT e.pos, r.run_id, e.seq, e.id, e.ts, e.type, e.thread_id, e.origin,
        e.causation_id, e.effect_id, e.idempotency_key, e.event_key, e.payload
      FROM ${s}.skein_events e JOIN ${s}.skein_runs r ON r.run_no = e.run_no
      WHERE e.pos > $1 ORDER BY e.pos LIMIT $2)
      UNION ALL
      (SELECT pos, run_id, tail + 1, 'deleted-' || pos, deleted_at, '${RUN_DELETED}', NULL,
        'runtime', NULL, NULL, NULL, NULL,
        json_build_object('reason', reason, 'tail', tail)::text
      FROM ${s}.skein_deletions WHERE pos > $1 ORDER BY pos LIMIT $2)
      ORDER BY pos LIMIT $2) page) sized
      WHERE sized.upto - sized.bytes < $3 ORDER BY sized.pos`,
    head: `SELECT greatest(coalesce((SELECT max(pos) FROM ${s}.skein_events), 0),
        (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ${s}.skein_feed_pos)) AS head`,
    checkpoint: `SELECT ${CHECKPOINT} FROM ${s}.skein_projectors WHERE name = $1`,
    // Written only while the projector's claim is held at the writer's epoch, not let go. The
    // claim row is locked (FOR SHARE) so a take-over cannot commit between check and write.
    save: `INSERT INTO ${s}.skein_projectors AS p (name, position, updated_at)
        SELECT $1, $2::bigint, $3::bigint WHERE EXISTS (SELECT 1 FROM ${s}.skein_claims
          WHERE name = $4 AND owner = $5 AND epoch = $6::bigint AND expires_at > 0 FOR SHARE)
      ON CONFLICT (name) DO UPDATE SET position = greatest(p.position, excluded.position),
        updated_at = CASE WHEN excluded.position > p.position THEN excluded.updated_at
          ELSE p.updated_at END
      RETURNING name`,
    coveredSeq: `SELECT coalesce(max(e.seq), 0) AS seq FROM ${s}.skein_events e
      WHERE e.run_no = (SELECT run_no FROM ${s}.skein_runs WHERE run_id = $1) AND e.pos <= $2`,
  }
  const watchers = new Set<() => void>()
  const feed: ProjectionFeed = {
    async readAfter(after, limit, maxBytes = Number.MAX_SAFE_INTEGER) {
      const rows = await read('read the projection feed', sql.readAfter, [after, limit, maxBytes])
      return rows.map(
        (row: EventRow & { pos: string; run_id: string; bytes: number }): FeedEntry => ({
          position: Number(row.pos),
          event: rowToEnvelope(row.run_id, row),
          bytes: row.bytes,
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
    async saveCheckpoint(name, owner, epoch, position, now) {
      const params = [name, position, now, projectorClaimName(name), owner, epoch]
      const rows = await read(`save checkpoint ${name}`, sql.save, params)
      return rows.length > 0
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
