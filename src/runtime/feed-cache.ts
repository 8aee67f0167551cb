import { firstAfter } from '../core/feed-position.js'
import type { FeedEntry, ProjectionFeed } from '../core/ports.js'

/**
 * The events the engine's projectors read, read once: a window of the latest entries read
 * from the store, shared by every projector of the engine, so N projectors at about the same
 * position cost one read (and one parse of each payload), not N.
 *
 * Invariant: the window holds every committed entry with a position in (from, to]. A store
 * read after `a` that returns entries up to `p` proves the range (a, p] complete (positions
 * follow commit order), so it extends the window when `a === to`, and replaces it otherwise.
 * Entries every reader has passed are dropped (`forget`), so a caught-up engine keeps none.
 */
export function feedCache(feed: ProjectionFeed, maxEntries = 4096) {
  let entries: FeedEntry[] = []
  let from = 0
  let to = 0
  return {
    async readAfter(after: number, limit: number): Promise<FeedEntry[]> {
      if (after >= from && after < to) {
        const start = firstAfter(entries, after)
        return entries.slice(start, start + limit)
      }
      const read = await feed.readAfter(after, limit)
      if (read.length === 0) return read
      const last = read[read.length - 1].position
      if (after === to && entries.length > 0) {
        for (const entry of read) entries.push(entry)
      } else {
        entries = [...read]
        from = after
      }
      // A replaced window ends where this read ended, not where the old one did: keeping the
      // old end would claim positions the window does not hold, and a reader there would skip.
      to = last
      if (entries.length > maxEntries) {
        const drop = entries.length - maxEntries
        from = entries[drop - 1].position
        entries = entries.slice(drop)
      }
      return read
    },
    /** Drops the entries up to `position`: every reader of this process is past them. */
    forget(position: number): void {
      if (position < from || entries.length === 0) return
      if (position >= to) {
        entries = []
        from = 0
        to = 0
        return
      }
      entries = entries.slice(firstAfter(entries, position))
      from = position
    },
  }
}
