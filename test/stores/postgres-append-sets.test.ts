import pg from 'pg'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { migrationSql, notifyChannel, schemaName } from '../../src/stores/postgres/schema.js'
import { statements } from '../../src/stores/postgres/statements.js'
import { freshPostgresStore, PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

// Migration 17's skein_append takes the common group set-based and hands every other group to
// migration 5's function, kept as skein_append_each (append-function-sets.ts). Both must give
// the same outcomes and leave the same rows: each random group below runs through both, each
// in a transaction rolled back, from the same committed state.

/** A deterministic generator (mulberry32), so a failure names a seed that replays. */
function random(seed: number) {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The committed state every group starts from: run id → tail (runs 5 and 6 have no row). */
const TAILS: Record<string, number> = { r1: 2, r2: 3, r3: 0, r4: 1, r5: 0, r6: 0 }

async function seed(client: pg.Client, s: string): Promise<void> {
  await client.query(`
    INSERT INTO ${s}.skein_runs (run_id, tail, status, lease_owner, lease_epoch, lease_expires_at)
    VALUES ('r1', 2, 'running', 'h1', 1, 100), ('r2', 3, 'running', NULL, 0, NULL),
      ('r3', 0, NULL, 'h2', 2, 50), ('r4', 1, 'waiting', 'h1', 3, 0)`)
  await client.query(`
    INSERT INTO ${s}.skein_events (run_no, seq, id, ts, type, origin, payload)
    SELECT r.run_no, g, r.run_id || '-' || g, 1, 'seeded', 'runtime', '{}'
    FROM ${s}.skein_runs r, generate_series(1, r.tail) g`)
}

/** A random group's `skein_append` parameters (without relaxed/isolated). */
function randomGroup(next: () => number): unknown[] {
  const pick = <T>(values: readonly T[]) => values[Math.floor(next() * values.length)]
  const ids = Object.keys(TAILS)
    .sort(() => next() - 0.5)
    .slice(0, 1 + Math.floor(next() * 6))
  // Now and then a run named twice or a key: the group goes to skein_append_each.
  if (next() < 0.1) ids.push(ids[0])
  const cols: unknown[][] = Array.from({ length: 15 }, () => [])
  const events: unknown[] = []
  ids.forEach((id, i) => {
    const tail = TAILS[id]
    const expected = pick([tail, tail, tail, tail + 1, tail - 1, 0])
    const count = pick([1, 1, 2, 2, 2, 0])
    const meta = next() < 0.5
    const claim = next() < 0.7
    const row = [
      id,
      expected,
      next() < 0.05 ? `k${i}` : null,
      count,
      meta ? pick(['running', 'completed']) : null,
      meta ? 'workflow' : null,
      meta ? 'demo' : null,
      meta ? '1' : null,
      meta ? 10 + i : null,
      meta ? 20 + i : null,
      meta ? pick([null, 99]) : null,
      claim ? pick(['h1', 'h2']) : null,
      claim ? pick([0, 1, 2, 3, 4]) : null,
      claim ? 500 : null,
      claim ? pick([10, 50, 60, 100, 200]) : null,
    ]
    for (const [c, value] of row.entries()) cols[c].push(value)
    for (let k = 1; k <= count; k++) {
      const seq = expected + k
      events.push({
        r: i + 1,
        s: seq,
        id: `${id}-${seq}-${i}`,
        ts: 5,
        t: 'x',
        th: 't',
        o: 'o',
        p: `{"k":${k}}`,
      })
    }
  })
  return [...cols, JSON.stringify(events), [], [], [], [], []]
}

/** What a call left: its outcome rows and every row of the runs, events and keys. */
async function outcome(client: pg.Client, s: string, text: string, params: unknown[]) {
  await client.query('BEGIN')
  try {
    const result = await client.query(text, params)
    const runs = await client.query(`SELECT run_id, head, tail, status, kind, definition_name,
        definition_version, created_at, updated_at, next_deadline_at, lease_owner, lease_epoch,
        lease_expires_at FROM ${s}.skein_runs
      -- A refused claim on a new run may leave an empty row (migration 5) or none.
      WHERE NOT (tail = 0 AND status IS NULL AND lease_owner IS NULL) ORDER BY run_id`)
    const events = await client.query(`SELECT r.run_id, e.seq, e.id, e.ts, e.type, e.thread_id,
        e.origin, e.causation_id, e.effect_id, e.idempotency_key, e.event_key, e.payload
      FROM ${s}.skein_events e JOIN ${s}.skein_runs r USING (run_no) ORDER BY r.run_id, e.seq`)
    const keys = await client.query(`SELECT r.run_id, k.key, k.seq FROM ${s}.skein_idempotency k
      JOIN ${s}.skein_runs r USING (run_no) ORDER BY r.run_id, k.key`)
    const rows = [...result.rows].sort((a, b) => a.o_req - b.o_req)
    return { rows, runs: runs.rows, events: events.rows, keys: keys.rows }
  } finally {
    await client.query('ROLLBACK')
  }
}

if (postgresAvailable('postgres-append-sets')) {
  const schemas = testSchemas('append_sets')

  describe('skein_append, set-based (migration 17)', () => {
    const client = new pg.Client({ connectionString: PG_URL })
    afterAll(() => client.end())

    it('gives every random group the outcomes and rows of migration 5’s function', async () => {
      await client.connect()
      const name = schemas.next()
      const s = `"${name}"`
      await client.query(migrationSql(schemaName(name)))
      await seed(client, s)
      const setBased = statements(s, notifyChannel(schemaName(name))).append
      const each = setBased.replace('.skein_append(', '.skein_append_each(')
      for (let n = 0; n < 300; n++) {
        const params = randomGroup(random(n))
        for (const relaxed of n % 7 === 0 ? [true] : [false]) {
          const expected = await outcome(client, s, each, [...params, relaxed, false])
          const actual = await outcome(client, s, setBased, [...params, relaxed, false])
          expect({ seed: n, ...actual }).toEqual({ seed: n, ...expected })
        }
      }
    })

    it('writes a group of new runs and a group of steps, failing only the conflicting requests', async () => {
      const store = freshPostgresStore(schemas)
      try {
        const ids = Array.from({ length: 8 }, (_, i) => `run-${i}`)
        const lease = (epoch: number) => ({ owner: 'h1', epoch, expiresAt: 10_000, now: 1 })
        await Promise.all(
          ids.map((id) =>
            store.append(id, makeEnvelopes(id, 1, 3), { expectedSeq: 0, lease: lease(1) }),
          ),
        )
        const results = await Promise.allSettled(
          ids.map((id, i) =>
            store.append(id, makeEnvelopes(id, i === 2 ? 3 : 4, 2), {
              expectedSeq: i === 2 ? 2 : 3,
              lease: lease(i === 5 ? 7 : 1),
            }),
          ),
        )
        const codes = results.map((r) => (r.status === 'fulfilled' ? 'ok' : r.reason.code))
        expect(codes).toEqual(['ok', 'ok', 'SEQ_CONFLICT', 'ok', 'ok', 'LEASE_LOST', 'ok', 'ok'])
        for (const [i, id] of ids.entries()) {
          const seqs = (await store.read(id)).map((e) => e.seq)
          expect(seqs).toEqual(i === 2 || i === 5 ? [1, 2, 3] : [1, 2, 3, 4, 5])
        }
      } finally {
        await store.close()
      }
    })
  })
}
