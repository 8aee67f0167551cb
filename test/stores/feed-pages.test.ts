import type { EventEnvelope } from 'skein'
import { describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

// A projector page of large events is bounded by bytes, not only by count: the store stops a
// read of the projection feed once the stored payloads reach `maxBytes` (the first entry always
// comes), so 500 events of 900 KiB never become one 450 MB buffer (docs/projectors.md, "Memory").

const KIB = 1024

function big(runId: string, seq: number, kib: number): EventEnvelope {
  return {
    id: `${runId}-${seq}`,
    runId,
    seq,
    ts: 1_700_000_000_000 + seq,
    type: 'test.big',
    payload: { text: `${seq}`.padEnd(kib * KIB, 'x') },
    threadId: 'root',
    origin: 'external',
  }
}

describe.each(storeKinds('feed-pages'))('projection feed pages on $name', (kind) => {
  it('stops a page at maxBytes of payload, first entry always, and reads on from there', async () => {
    const store = kind.fresh().open()
    const feed = store.feed
    if (!feed) throw new Error(`${kind.name} has no projection feed`)
    // 40 events of 100 KiB over two runs, appended one by one.
    for (let seq = 1; seq <= 20; seq++) {
      for (const runId of ['a', 'b']) {
        await store.append(runId, [big(runId, seq, 100)], { expectedSeq: seq - 1 })
      }
    }
    const all = await feed.readAfter(0, 500)
    expect(all).toHaveLength(40)
    if (kind.name === 'memory') return // holds every event anyway: bounded by count only

    let after = 0
    const seen: number[] = []
    let pages = 0
    while (true) {
      const page = await feed.readAfter(after, 500, 350 * KIB)
      if (page.length === 0) break
      pages++
      // Each entry reports its stored size; a page stops once it reaches the bound.
      for (const entry of page) expect(entry.bytes).toBeGreaterThan(100 * KIB)
      expect(page.length).toBeLessThanOrEqual(4)
      seen.push(...page.map((e) => e.position))
      after = page[page.length - 1].position
    }
    expect(seen).toEqual(all.map((e) => e.position))
    expect(pages).toBeGreaterThanOrEqual(10)

    // One event larger than the bound still comes, alone.
    await store.append('a', [big('a', 21, 600)], { expectedSeq: 20 })
    const [only, ...rest] = await feed.readAfter(after, 500, 350 * KIB)
    expect(only.event.seq).toBe(21)
    expect(rest).toEqual([])
  })
})
