import type { EventEnvelope } from '../../core/envelope.js'
import { firstAfter } from '../../core/feed-position.js'
import type { FeedEntry, ProjectionFeed, ProjectorCheckpoint } from '../../core/ports.js'

/**
 * The memory store's projection feed: every committed event in commit order, with the
 * checkpoints beside it. Trimmed events leave the feed too (`compact`), so a long-lived
 * memory store does not keep what its runs no longer hold.
 */
export function memoryFeed(runEvents: (runId: string) => readonly EventEnvelope[] | undefined) {
  let entries: FeedEntry[] = []
  let position = 0
  let trimmed = 0
  const checkpoints = new Map<string, ProjectorCheckpoint>()
  const watchers = new Set<() => void>()
  const positions = new WeakMap<EventEnvelope, number>()

  const feed: ProjectionFeed = {
    async readAfter(after, limit) {
      const lo = firstAfter(entries, after)
      return entries.slice(lo, lo + Math.max(0, limit))
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
    async claim(name, owner, now, expiresAt) {
      const row = checkpoints.get(name)
      if (row && row.owner !== null && row.owner !== owner && row.expiresAt > now) return null
      const next = {
        name,
        position: row?.position ?? 0,
        owner,
        expiresAt,
        updatedAt: row?.updatedAt ?? 0,
      }
      checkpoints.set(name, next)
      return { ...next }
    },
    async saveCheckpoint(name, owner, at, now) {
      const row = checkpoints.get(name)
      if (!row || row.owner !== owner) return false
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
    async release(name, owner) {
      const row = checkpoints.get(name)
      if (row && row.owner === owner) {
        row.owner = null
        row.expiresAt = 0
      }
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
    /** Drops trimmed events (`isTrimmed`) once they are a good share of the feed. */
    trimmed(count: number, isTrimmed: (event: EventEnvelope) => boolean): void {
      trimmed += count
      if (trimmed * 2 < entries.length) return
      entries = entries.filter((entry) => !isTrimmed(entry.event))
      trimmed = 0
    },
  }
}
