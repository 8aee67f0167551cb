import { describe, expect, it } from 'vitest'
import type { FeedEntry, ProjectionFeed } from '../../src/core/ports.js'
import { feedCache } from '../../src/runtime/feed-cache.js'

// The projectors' shared read window (src/runtime/feed-cache.ts). Two projectors at different
// positions read through one window; whatever either asks for must be exactly the store's
// answer: a skipped position is an event a projector never sees (the run index of the crash
// loop, test/projectors/projector-crash.test.ts, lost runs' last events that way).

function storeOf(count: number) {
  const log: FeedEntry[] = Array.from({ length: count }, (_, i) => ({
    position: i + 1,
    event: { runId: `r${i % 3}`, seq: i + 1 } as FeedEntry['event'],
  }))
  let reads = 0
  const feed = {
    async readAfter(after: number, limit: number) {
      reads++
      return log.filter((e) => e.position > after).slice(0, limit)
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
    const cache = feedCache(feed, 64)
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
})

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i)
}
