import { describe, expect, it } from 'vitest'
import type { FeedEntry, ProjectionFeed } from '../../src/core/ports.js'
import { feedCache } from '../../src/runtime/feed-cache.js'

// The projectors' shared read window (src/runtime/feed-cache.ts). Two projectors at different
// positions read through one window; whatever either asks for must be exactly the store's
// answer: a skipped position is an event a projector never sees (the run index of the crash
// loop, test/projectors/projector-crash.test.ts, lost runs' last events that way).

function storeOf(count: number, sizeOf: (position: number) => number = () => 100) {
  const log: FeedEntry[] = Array.from({ length: count }, (_, i) => ({
    position: i + 1,
    event: { runId: `r${i % 3}`, seq: i + 1 } as FeedEntry['event'],
    bytes: sizeOf(i + 1),
  }))
  let reads = 0
  const feed = {
    // As the stores read: at most `limit`, and nothing after the payloads reach `maxBytes`.
    async readAfter(after: number, limit: number, maxBytes = Number.POSITIVE_INFINITY) {
      reads++
      const page: FeedEntry[] = []
      let read = 0
      for (const entry of log.filter((e) => e.position > after).slice(0, limit)) {
        page.push(entry)
        read += entry.bytes ?? 0
        if (read >= maxBytes) break
      }
      return page
    },
  } as unknown as ProjectionFeed
  return { feed, log, reads: () => reads }
}

const positions = (entries: FeedEntry[]) => entries.map((e) => e.position)

describe('feedCache', () => {
  it('forget drops what every reader passed: a caught-up cache holds nothing, reads stay exact', async () => {
    const { feed, reads } = storeOf(300)
    const cache = feedCache(feed)
    await cache.readAfter(0, 100)
    cache.forget(60) // the slowest reader is at 60: (60, 100] stays
    expect(positions(await cache.readAfter(60, 10))).toEqual(range(61, 70))
    expect(reads()).toBe(1)
    // Anything at or before what was forgotten comes from the store again, exactly.
    expect(positions(await cache.readAfter(50, 5))).toEqual(range(51, 55))
    expect(reads()).toBe(2)
    cache.forget(300) // every reader caught up: nothing kept
    expect(positions(await cache.readAfter(52, 3))).toEqual(range(53, 55))
    expect(reads()).toBe(3)
  })

  it('a reader behind the window, then one ahead of it, then the first again: no position skipped', async () => {
    const { feed, log } = storeOf(300)
    const cache = feedCache(feed)
    // A projector far ahead fills the window (100, 200].
    await cache.readAfter(100, 100)
    // One behind it (a restarted projector) replaces the window with (50, 60].
    expect(positions(await cache.readAfter(50, 10))).toEqual(range(51, 60))
    // The one ahead reads on from 200: the window must not be extended past a hole.
    expect(positions(await cache.readAfter(200, 50))).toEqual(range(201, 250))
    // The one behind reads on from 60: it must get 61…, not jump to 201.
    expect(positions(await cache.readAfter(60, 20))).toEqual(range(61, 80))
    expect(positions(await cache.readAfter(120, 5))).toEqual(range(121, 125))
    expect(log.length).toBe(300)
  })

  it('random readers at random positions always get a prefix of the store answer, never empty when it is not', async () => {
    const { feed, log } = storeOf(2000)
    const cache = feedCache(feed, { maxEntries: 64 })
    let seed = 7
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    for (let i = 0; i < 5000; i++) {
      const after = Math.floor(random() * 2100)
      const limit = 1 + Math.floor(random() * 80)
      const expected = log.filter((e) => e.position > after).slice(0, limit)
      const got = positions(await cache.readAfter(after, limit))
      // The window may end before `limit` (the reader asks again); it never skips or invents.
      expect(got).toEqual(positions(expected).slice(0, got.length))
      expect(got.length > 0).toBe(expected.length > 0)
    }
  })

  it('readers that follow each other are served from the window (one store read for the pair)', async () => {
    const { feed, reads } = storeOf(100)
    const cache = feedCache(feed)
    for (let after = 0; after < 100; after += 10) {
      await cache.readAfter(after, 10)
      await cache.readAfter(after, 10)
    }
    expect(reads()).toBe(10)
  })

  it('bounds pages and the window by payload bytes: large events never pile up', async () => {
    const MIB = 1024 * 1024
    // Every fifth event is 3 MiB, the rest 1 KiB.
    const { feed, log } = storeOf(500, (p) => (p % 5 === 0 ? 3 * MIB : 1024))
    const cache = feedCache(feed, { maxBytes: 8 * MIB, pageBytes: 4 * MIB })
    let after = 0
    let seen = 0
    let seed = 11
    while (after < log.length) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      const page = await cache.readAfter(after, 1 + (seed % 200))
      expect(page[0].position).toBe(after + 1)
      // Past the first entry, a page holds less than pageBytes before its last entry.
      const beforeLast = page.slice(0, -1).reduce((sum, e) => sum + (e.bytes ?? 0), 0)
      expect(beforeLast).toBeLessThan(4 * MIB)
      expect(cache.held().bytes).toBeLessThanOrEqual(8 * MIB)
      seen += page.length
      after = page[page.length - 1].position
    }
    expect(seen).toBe(log.length)
  })

  it('a random walk over large events stays exact with a byte-bounded window', async () => {
    const { feed, log } = storeOf(600, (p) => (p % 7 === 0 ? 5000 : 300))
    const cache = feedCache(feed, { maxBytes: 20_000, pageBytes: 6000 })
    let seed = 3
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    for (let i = 0; i < 3000; i++) {
      const after = Math.floor(random() * 650)
      const limit = 1 + Math.floor(random() * 50)
      const expected = log.filter((e) => e.position > after).slice(0, limit)
      const got = positions(await cache.readAfter(after, limit))
      expect(got).toEqual(positions(expected).slice(0, got.length))
      expect(got.length > 0).toBe(expected.length > 0)
      expect(cache.held().bytes).toBeLessThanOrEqual(20_000)
    }
  })
})

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i)
}
