import type { EventEnvelope } from 'skein'
import { makeEnvelopes } from 'skein/testing'
import { describe, expect, it } from 'vitest'
import { createChangeFeed } from '../../src/stores/postgres/change-feed.js'

// The change feed's starting point for a new watcher (docs/storage.md, "Several processes on
// one schema"): when its first tail read fails (an outage), the poll that later reads the tail
// must not start the watcher silently past events appended meanwhile. A run waiting for its
// listener's reaction to such an event would wait forever (the outage test once hung so).

describe('a watcher whose first tail read failed', () => {
  it('gets the run’s last event from the first poll that reads the tail', async () => {
    const log: EventEnvelope[] = makeEnvelopes('r', 1, 4)
    let failTails = true
    const delivered: number[] = []
    const feed = createChangeFeed({
      channel: 'test',
      readTails: async (ids) => {
        if (failTails) throw new Error('connection terminated')
        return ids.map((runId) => ({ runId, tail: log.length }))
      },
      readEvents: async (_runId, fromSeq) => log.filter((e) => e.seq >= fromSeq),
      deliver: (_runId, events) => delivered.push(...events.map((e) => e.seq)),
      pollIntervalMs: 20,
      onError: () => {},
    })
    try {
      feed.watch('r') // subscribed at tail 4; the tail read fails
      await new Promise((r) => setTimeout(r, 10))
      log.push(...makeEnvelopes('r', 5, 2)) // another host appends 5 and 6, then nothing
      failTails = false
      for (let i = 0; i < 200 && delivered.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 10))
      }
      // Seq 6 reaches the listener: it reads the hole (5) from the log itself.
      expect(delivered).toEqual([6])
    } finally {
      await feed.close()
    }
  })
})
