import type { FeedEntry } from './ports.js'

/**
 * The index of the first entry with a position after `after` in entries sorted by position
 * (`entries.length` when there is none), by bisection.
 */
export function firstAfter(entries: readonly FeedEntry[], after: number): number {
  let lo = 0
  let hi = entries.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (entries[mid].position <= after) lo = mid + 1
    else hi = mid
  }
  return lo
}
