import type { EventEnvelope } from '../../core/envelope.js'
import { firstAfter } from '../../core/feed-position.js'
import type { FeedEntry, ProjectionFeed, ProjectorCheckpoint } from '../../core/ports.js'
import { projectorClaimName } from '../../core/projector.js'

/**
 * The memory store's projection feed: every committed event in commit order, with the
 * checkpoints beside it (a save checks the projector's claim: `holds`). Trimmed events leave the feed too (`compact`), so a long-lived
 * memory store does not keep what its runs no longer hold.
 */
export function memoryFeed(
  runEvents: (runId: string) => readonly EventEnvelope[] | undefined,
  holds: (claim: string, owner: string, epoch: number) => boolean,
) {
  let entries: FeedEntry[] = []
  let position = 0
  let trimmed = 0
  const checkpoints = new Map<string, ProjectorCheckpoint>()
  const watchers = new Set<() => void>()
  const positions = new WeakMap<EventEnvelope, number>()
  /** Events of deleted runs, left out of reads until the next compaction drops them. */
  const gone = new WeakSet<EventEnvelope>()
  /** Deletion records: kept until every checkpoint passed them. */
  const records = new WeakSet<EventEnvelope>()
  /** Keeps what a read may still need: no deleted run's event, no record every checkpoint passed. */
  const compact = (isTrimmed: (event: EventEnvelope) => boolean) => {
    let floor = position - 1
    for (const c of checkpoints.values()) floor = Math.min(floor, c.position)
    entries = entries.filter(
      (e) =>
        !isTrimmed(e.event) && !gone.has(e.event) && !(records.has(e.event) && e.position <= floor),
    )
    trimmed = 0
  }

  const feed: ProjectionFeed = {
    async readAfter(after, limit) {
      const out: FeedEntry[] = []
      for (let i = firstAfter(entries, after); i < entries.length && out.length < limit; i++) {
        if (!gone.has(entries[i].event)) out.push(entries[i])
      }
      return out
    },
    async headPosition() {
      return position
    },
    watch(listener) {
      watchers.add(listener)
      return () => {
        watchers.delete(listener)
      }
    },
    async checkpoint(name) {
      const row = checkpoints.get(name)
      return row ? { ...row } : null
    },
    async saveCheckpoint(name, owner, epoch, at, now) {
      if (!holds(projectorClaimName(name), owner, epoch)) return false
      let row = checkpoints.get(name)
      if (!row) checkpoints.set(name, (row = { name, position: 0, updatedAt: 0 }))
      if (at > row.position) {
        row.position = at
        row.updatedAt = now
      }
      return true
    },
    async coveredSeq(runId, at) {
      const events = runEvents(runId) ?? []
      for (let i = events.length - 1; i >= 0; i--) {
        if ((positions.get(events[i]) ?? 0) <= at) return events[i].seq
      }
      return 0
    },
  }

  return {
    feed,
    /** Records a committed batch and tells the watchers. */
    committed(events: readonly EventEnvelope[]): void {
      for (const event of events) {
        entries.push({ position: ++position, event })
        positions.set(event, position)
      }
      for (const watcher of [...watchers]) {
        try {
          watcher()
        } catch {}
      }
    },
    /**
     * A run was deleted: its events leave the feed, and its deletion record (made with the
     * next position) joins it.
     */
    deleted(events: readonly EventEnvelope[], record: (position: number) => EventEnvelope): void {
      for (const event of events) gone.add(event)
      const entry = { position: ++position, event: record(position) }
      records.add(entry.event)
      entries.push(entry)
      trimmed += events.length + 1
      if (trimmed * 2 >= entries.length) compact(() => false)
      for (const watcher of [...watchers]) {
        try {
          watcher()
        } catch {}
      }
    },
    /** Drops trimmed events (`isTrimmed`) once they are a good share of the feed. */
    trimmed(count: number, isTrimmed: (event: EventEnvelope) => boolean): void {
      trimmed += count
      if (trimmed * 2 < entries.length) return
      compact(isTrimmed)
    },
  }
}
