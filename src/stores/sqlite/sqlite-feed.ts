import type { EventEnvelope } from '../../core/envelope.js'
import { firstAfter } from '../../core/feed-position.js'
import type { FeedEntry, ProjectionFeed, ProjectorCheckpoint } from '../../core/ports.js'
import { projectorClaimName } from '../../core/projector.js'
import { RUN_DELETED } from '../../core/run-deletion.js'
import { type EventRow, rowToEnvelope } from '../shared/event-rows.js'
import type { SqliteDatabase } from './driver.js'
import { lazyStatements } from './statements.js'
import { unsyncedWrite } from './unsynced-write.js'

interface CheckpointRow {
  name: string
  position: number
  updated_at: number
}

const toCheckpoint = (row: CheckpointRow): ProjectorCheckpoint => ({
  name: row.name,
  position: row.position,
  updatedAt: row.updated_at,
})

interface SaveParams {
  name: string
  claim: string
  owner: string
  epoch: number
  position: number
  now: number
}

/** The newest commits a watched feed keeps in memory: at most this many events … */
export const RECENT_ENTRIES = 8192
/** … and at most this many bytes of stored payload (a large event may not be kept at all). */
export const RECENT_BYTES = 8 * 1024 * 1024

/**
 * The newest committed entries, in position order, at most `maxEntries` and `maxBytes` (each
 * entry's size: its batch's stored payload bytes shared evenly), oldest dropped first.
 */
const DROPPED = null as unknown as EventEnvelope

function recentWindow(maxEntries: number, maxBytes: number) {
  let entries: FeedEntry[] = []
  let sizes: number[] = []
  let start = 0 // entries before it are dropped (compacted away in bulk)
  let bytes = 0
  const compact = () => {
    entries = entries.slice(start)
    sizes = sizes.slice(start)
    start = 0
  }
  return {
    add(events: readonly EventEnvelope[], lastPosition: number, payloadBytes: number): void {
      const first = lastPosition - events.length + 1
      const size = Math.ceil(payloadBytes / events.length)
      for (let i = 0; i < events.length; i++) {
        entries.push({ position: first + i, event: events[i] })
        sizes.push(size)
        bytes += size
      }
      while (start < entries.length && (bytes > maxBytes || entries.length - start > maxEntries)) {
        bytes -= sizes[start]
        // Its position stays until the next compaction (the search needs it); its event goes.
        entries[start] = { position: entries[start].position, event: DROPPED }
        start++
      }
      if (start > 1024 && start * 2 > entries.length) compact()
    },
    /**
     * Entries from `after + 1` on, without a gap, at most `limit` and, past the first, no more
     * than `maxBytes` of payload; undefined if not all here.
     */
    from(after: number, limit: number, maxBytes: number): FeedEntry[] | undefined {
      if (start === entries.length || after + 1 < entries[start].position) return undefined
      const lo = Math.max(start, firstAfter(entries, after))
      if (lo === entries.length || entries[lo].position !== after + 1) return undefined
      let end = lo + 1
      let read = sizes[lo]
      while (
        end < entries.length &&
        end - lo < limit &&
        read < maxBytes &&
        entries[end].position === entries[end - 1].position + 1
      ) {
        read += sizes[end]
        end++
      }
      return entries.slice(lo, end).map((entry, i) => ({ ...entry, bytes: sizes[lo + i] }))
    },
    clear(): void {
      entries = []
      sizes = []
      start = 0
      bytes = 0
    },
  }
}

/**
 * The SQLite store's projection feed: positions are the events table's integer key (commit
 * order, never reused: kept-position.ts), checkpoints live in `skein_projectors`. A save is one
 * statement that checks the projector's claim (`skein_claims`), atomic against other processes
 * on the same file. With `relaxSaves`
 * (a FULL store on a WAL file) a save commits without its own fsync.
 */
export function sqliteFeed(db: SqliteDatabase, guard: () => void, relaxSaves: boolean) {
  // Prepared at first use: most connections (an actor host's cells) never read the feed.
  const st = lazyStatements(db, (lazy) => ({
    // Events and deletion records (docs/data-lifecycle.md) in one order, each side bounded.
    readAfter: lazy.prepare<
      [{ after: number; limit: number }],
      EventRow & { pos: number; run_id: string }
    >(
      `SELECT * FROM (SELECT e.pos, r.run_id, e.seq, e.id, e.ts, e.type, e.thread_id, e.origin,
          e.causation_id, e.effect_id, e.idempotency_key, e.event_key, e.payload
          FROM skein_events e JOIN skein_runs r ON r.run_no = e.run_no
          WHERE e.pos > @after ORDER BY e.pos LIMIT @limit)
        UNION ALL
        SELECT * FROM (SELECT pos, run_id, tail + 1, 'deleted-' || pos, deleted_at,
          '${RUN_DELETED}', NULL, 'runtime', NULL, NULL, NULL, NULL,
          json_object('reason', reason, 'tail', tail)
          FROM skein_deletions WHERE pos > @after ORDER BY pos LIMIT @limit)
        ORDER BY pos LIMIT @limit`,
    ),
    // A keeper row holds the highest position given when its event was trimmed or deleted.
    head: lazy.prepare<[], number>('SELECT coalesce(max(pos), 0) FROM skein_events').pluck(),
    checkpoint: lazy.prepare<[string], CheckpointRow>(
      'SELECT name, position, updated_at FROM skein_projectors WHERE name = ?',
    ),
    // Written only while the projector's claim is held at the writer's epoch, not let go.
    save: lazy.prepare<[SaveParams]>(
      `INSERT INTO skein_projectors (name, position, updated_at)
        SELECT @name, @position, @now WHERE EXISTS (SELECT 1 FROM skein_claims
          WHERE name = @claim AND owner = @owner AND epoch = @epoch AND expires_at > 0)
        ON CONFLICT (name) DO UPDATE SET position = max(position, excluded.position),
          updated_at = CASE WHEN excluded.position > position THEN excluded.updated_at
            ELSE updated_at END`,
    ),
    coveredSeq: lazy
      .prepare<[string, number], number>(
        `SELECT coalesce(max(seq), 0) FROM skein_events
          WHERE run_no = (SELECT run_no FROM skein_runs WHERE run_id = ?) AND pos <= ?`,
      )
      .pluck(),
  }))
  const watchers = new Set<() => void>()
  // This connection's latest commits with their positions, so the projectors of the process
  // that wrote them read them without a query or a parse. Served only where positions run on
  // from \`after + 1\` without a gap: a gap may be another process's commit (or a rolled-back
  // key), and the table is read instead. Kept only while a watcher (a projector runner) reads
  // the feed, and bounded by count and by the bytes of the stored payloads.
  const recent = recentWindow(RECENT_ENTRIES, RECENT_BYTES)
  const feed: ProjectionFeed = {
    async readAfter(after, limit, maxBytes = Number.POSITIVE_INFINITY) {
      guard()
      const local = recent.from(after, limit, maxBytes)
      if (local) return local
      // Row by row, so a page of large events stops at `maxBytes` before the rest is fetched.
      const page: FeedEntry[] = []
      let read = 0
      for (const row of st.readAfter.iterate({ after, limit: Math.max(0, limit) })) {
        const bytes = row.payload.length
        page.push({ position: row.pos, event: rowToEnvelope(row.run_id, row), bytes })
        read += bytes
        if (read >= maxBytes) break
      }
      return page
    },
    async headPosition() {
      guard()
      return st.head.get() ?? 0
    },
    watch(listener) {
      watchers.add(listener)
      return () => {
        watchers.delete(listener)
        if (watchers.size === 0) recent.clear()
      }
    },
    async checkpoint(name) {
      guard()
      const row = st.checkpoint.get(name)
      return row ? toCheckpoint(row) : null
    },
    async saveCheckpoint(name, owner, epoch, position, now) {
      guard()
      const params = { name, claim: projectorClaimName(name), owner, epoch, position, now }
      // A checkpoint that a power loss takes back only hands events over again (at least
      // once), so its write skips the fsync; the store's next FULL commit makes it durable.
      return unsyncedWrite(db, relaxSaves, () => st.save.run(params).changes > 0)
    },
    async coveredSeq(runId, position) {
      guard()
      return st.coveredSeq.get(runId, position) ?? 0
    },
  }
  return {
    feed,
    /** Runs were deleted: their events leave the cache, and the watchers look at the feed. */
    deleted(): void {
      recent.clear()
      for (const watcher of [...watchers]) {
        try {
          watcher()
        } catch {}
      }
    },
    /**
     * Records a committed batch (its last event at `lastPosition`, its stored payloads
     * `payloadBytes` long) while the feed is watched, and tells the watchers.
     */
    committed(events: readonly EventEnvelope[], lastPosition: number, payloadBytes: number): void {
      if (lastPosition > 0 && watchers.size > 0) recent.add(events, lastPosition, payloadBytes)
      for (const watcher of [...watchers]) {
        try {
          watcher()
        } catch {}
      }
    },
  }
}
