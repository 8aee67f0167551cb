import { firstAfter } from '../core/feed-position.js'
import type { FeedEntry, ProjectionFeed } from '../core/ports.js'

const MIB = 1024 * 1024

/**
 * The events the engine's projectors read, read once: a window of the latest entries read
 * from the store, shared by every projector of the engine, so N projectors at about the same
 * position cost one read (and one parse of each payload), not N.
 *
 * Invariant: the window holds every committed entry with a position in (from, to]. A store
 * read after `a` that returns entries up to `p` proves the range (a, p] complete (positions
 * follow commit order), so it extends the window when `a === to`, and replaces it otherwise.
 * Entries every reader has passed are dropped (`forget`), so a caught-up engine keeps none.
 * The window holds at most `maxEntries` entries and `maxBytes` of stored payload (oldest
 * dropped first), and each page is bounded by `pageBytes` as the store reads it, so large
 * events never make a large buffer (docs/projectors.md, "Memory").
 */
export function feedCache(
  feed: ProjectionFeed,
  { maxEntries = 4096, maxBytes = 16 * MIB, pageBytes = 4 * MIB } = {},
) {
  let entries: FeedEntry[] = []
  let bytes = 0
  let from = 0
  let to = 0
  const dropTo = (index: number) => {
    for (let i = 0; i < index; i++) bytes -= entries[i].bytes ?? 0
    from = entries[index - 1].position
    entries = entries.slice(index)
  }
  return {
    async readAfter(after: number, limit: number): Promise<FeedEntry[]> {
      if (after >= from && after < to) {
        const start = firstAfter(entries, after)
        const page = entries.slice(start, start + limit)
        let read = 0
        for (let i = 0; i < page.length; i++) {
          read += page[i].bytes ?? 0
          if (read >= pageBytes) return page.slice(0, i + 1)
        }
        return page
      }
      const read = await feed.readAfter(after, limit, pageBytes)
      if (read.length === 0) return read
      const last = read[read.length - 1].position
      if (after !== to || entries.length === 0) {
        entries = []
        bytes = 0
        from = after
      }
      for (const entry of read) {
        entries.push(entry)
        bytes += entry.bytes ?? 0
      }
      // A replaced window ends where this read ended, not where the old one did: keeping the
      // old end would claim positions the window does not hold, and a reader there would skip.
      to = last
      let drop = Math.max(0, entries.length - maxEntries)
      let held = bytes
      for (let i = 0; i < drop; i++) held -= entries[i].bytes ?? 0
      for (; drop < entries.length && held > maxBytes; drop++) held -= entries[drop].bytes ?? 0
      if (drop === entries.length) {
        // Nothing of this read fits: hold none of it (the next read goes to the store).
        entries = []
        bytes = 0
        from = 0
        to = 0
      } else if (drop > 0) {
        dropTo(drop)
      }
      return read
    },
    /** What the window holds now: entries and their stored payload bytes. */
    held(): { entries: number; bytes: number } {
      return { entries: entries.length, bytes }
    },
    /** Drops the entries up to `position`: every reader of this process is past them. */
    forget(position: number): void {
      if (position < from || entries.length === 0) return
      if (position >= to) {
        entries = []
        bytes = 0
        from = 0
        to = 0
        return
      }
      const keep = firstAfter(entries, position)
      if (keep > 0) dropTo(keep)
      from = position
    },
  }
}
