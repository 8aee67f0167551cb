import pg from 'pg'
import { type PostgresQueryable, type PostgresStore, postgresStore } from 'skein/postgres'
import { makeEnvelopes } from 'skein/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

const meta = {
  status: 'running' as const,
  kind: 'workflow',
  definitionName: 'demo',
  definitionVersion: '1',
  createdAt: 1,
  updatedAt: 2,
  nextDeadlineAt: null,
}

/** A pg pool that records every statement it runs. */
function recordingPool(): PostgresQueryable & { texts: string[]; end(): Promise<void> } {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4 })
  const texts: string[] = []
  return {
    texts,
    query: (text: string, params?: unknown[]) => {
      texts.push(text)
      return pool.query(text, params)
    },
    end: () => pool.end(),
  }
}

if (postgresAvailable('postgres-batched-reads')) {
  const schemas = testSchemas('batched')
  const opened: Array<PostgresStore | { end(): Promise<void> }> = []
  afterEach(async () => {
    for (const handle of opened.splice(0).reverse()) {
      await ('close' in handle ? handle.close() : handle.end())
    }
  })

  describe('postgres reads of many runs in one loop turn', () => {
    it('answers each as its own read would, with one statement for the events and one for the snapshots', async () => {
      const pool = recordingPool()
      const store = postgresStore({ pool }, { schema: schemas.next() })
      opened.push(pool, store)
      const runs = ['a', 'b', 'c']
      for (const [i, runId] of runs.entries()) {
        const events = makeEnvelopes(runId, 1, 3 + i, (seq) => ({ seq, runId }))
        await store.append(runId, events, { expectedSeq: 0, idempotencyKey: runId, meta })
        for (const seq of [1, 2 + i]) {
          await store.snapshots.save({ runId, seq, createdAt: seq, format: 1, data: { seq } })
        }
      }

      const asks = [
        ['a', 1],
        ['b', 2],
        ['b', 4],
        ['c', 5],
        ['nobody', 1],
      ] as const
      const alone = []
      for (const [runId, fromSeq] of asks) alone.push(await store.read(runId, { fromSeq }))
      const snapshotsAlone = []
      for (const [runId, atOrBefore] of asks)
        snapshotsAlone.push(await store.snapshots.latest(runId, atOrBefore))

      const before = pool.texts.length
      const together = await Promise.all(asks.map(([r, fromSeq]) => store.read(r, { fromSeq })))
      const snapshotsTogether = await Promise.all(
        asks.map(([r, atOrBefore]) => store.snapshots.latest(r, atOrBefore)),
      )
      expect(together).toStrictEqual(alone)
      expect(snapshotsTogether).toStrictEqual(snapshotsAlone)
      expect(together.map((events) => events.length)).toEqual([3, 3, 1, 1, 0])
      expect(snapshotsTogether.map((s) => s?.seq ?? null)).toEqual([1, 1, 3, 4, null])
      const reads = pool.texts
        .slice(before)
        .filter(
          (t) =>
            /^\s*SELECT[\s\S]*\.skein_(events|snapshots)\b/.test(t) && !t.includes('skein_append'),
        )
      expect(reads).toHaveLength(2)
      expect(reads.every((t) => t.includes('WITH ORDINALITY'))).toBe(true)
    })
  })
}
