import type { EventEnvelope } from 'skein'
import type { PostgresStore } from 'skein/postgres'
import { makeEnvelopes } from 'skein/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { freshPostgresStore, postgresAvailable, testSchemas } from '../support/postgres.js'

/** Polls `check` until it holds (generous: the machine is shared), then returns. */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000) {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

// subscribe on one store sees what another store (another process's pool) appends to the same
// schema: NOTIFY as the hint, polling as the fallback.
if (postgresAvailable('postgres-change-feed')) {
  const schemas = testSchemas('feed')
  describe('postgres change feed across two stores on one schema', () => {
    const opened: PostgresStore[] = []
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close()
    })
    const pair = async (pollIntervalMs = 1000) => {
      const a = freshPostgresStore(schemas, { pollIntervalMs })
      await a.ready()
      const b = freshPostgresStore(schemas, { schema: a.schema, pollIntervalMs })
      opened.push(a, b)
      return [a, b] as const
    }
    const seqsOf = (got: EventEnvelope[]) => got.map((e) => e.seq)

    it('delivers events another store appends, in order, once', async () => {
      const [a, b] = await pair(60_000)
      await a.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 })
      const got: EventEnvelope[] = []
      b.subscribe('r1', (events) => got.push(...events))
      // Wait for the subscription's starting point (the run's tail) before appending.
      await new Promise((r) => setTimeout(r, 300))
      for (let seq = 2; seq <= 11; seq++) {
        await a.append('r1', makeEnvelopes('r1', seq, 1), { expectedSeq: seq - 1 })
      }
      // The poll interval is a minute: only the notifications can deliver these in time.
      await until(() => got.length >= 10, '10 events on store b')
      expect(seqsOf(got)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
      expect(got[0]).toEqual(makeEnvelopes('r1', 2, 1)[0])
    })

    it('interleaves local and remote appends without a hole or a duplicate', async () => {
      const [a, b] = await pair()
      const got: EventEnvelope[] = []
      b.subscribe('r2', (events) => got.push(...events))
      await new Promise((r) => setTimeout(r, 300))
      for (let seq = 1; seq <= 30; seq++) {
        const store = seq % 3 === 0 ? b : a
        await store.append('r2', makeEnvelopes('r2', seq, 1), { expectedSeq: seq - 1 })
      }
      await until(() => got.length >= 30, '30 events on store b')
      await new Promise((r) => setTimeout(r, 300))
      expect(seqsOf(got)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1))
    })

    it('a lost LISTEN connection only delays: the poll and the reconnect catch up', async () => {
      const [a, b] = await pair(300)
      const got: EventEnvelope[] = []
      b.subscribe('r3', (events) => got.push(...events))
      await new Promise((r) => setTimeout(r, 300))
      await a.append('r3', makeEnvelopes('r3', 1, 1), { expectedSeq: 0 })
      await until(() => got.length >= 1, 'first event')
      // Drop every LISTEN connection of this schema's stores (the hint is gone for a while).
      const { rows } = await schemas.admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'skein-listen' AND query = $1`,
        [`LISTEN "skein/${a.schema}"`],
      )
      expect(rows.length).toBeGreaterThan(0)
      for (let seq = 2; seq <= 5; seq++) {
        await a.append('r3', makeEnvelopes('r3', seq, 1), { expectedSeq: seq - 1 })
      }
      await until(() => got.length >= 5, 'events appended while the listener was down')
      expect(seqsOf(got)).toEqual([1, 2, 3, 4, 5])
    })

    it('unsubscribed listeners hear nothing more', async () => {
      const [a, b] = await pair(200)
      const got: EventEnvelope[] = []
      const off = b.subscribe('r4', (events) => got.push(...events))
      await new Promise((r) => setTimeout(r, 300))
      await a.append('r4', makeEnvelopes('r4', 1, 1), { expectedSeq: 0 })
      await until(() => got.length >= 1, 'first event')
      off()
      off()
      await a.append('r4', makeEnvelopes('r4', 2, 1), { expectedSeq: 1 })
      await new Promise((r) => setTimeout(r, 600))
      expect(seqsOf(got)).toEqual([1])
    })
  })
}
