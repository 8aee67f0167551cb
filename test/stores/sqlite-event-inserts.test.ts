import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { sqliteStore } from '../../src/stores/sqlite/index.js'

// A group commit inserts its events several rows per statement, across its requests
// (decisions.md, "SQLite appends insert a group's events 16 rows per statement"): each
// request's events keep their order and the feed positions this process hands its projectors
// without a query are the ones the table holds.

const dir = mkdtempSync(join(tmpdir(), 'skein-sqlite-inserts-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

describe('sqlite store: events inserted several rows per statement', () => {
  it('gives a group spanning statements and requests the positions the table holds', async () => {
    const path = join(dir, `inserts-${++files}.db`)
    const store = sqliteStore({ path })
    const feed = store.feed!
    // A watcher keeps the window of this connection's commits, which serves the reads below.
    const stop = feed.watch(() => {})
    await store.append('warm', makeEnvelopes('warm', 1, 2), { expectedSeq: 0 })
    // One turn: one group of 7 + 20 + 3 + 16 events (statements of 16 cross the requests).
    const sizes = { a: 7, b: 20, c: 3, d: 16 }
    await Promise.all(
      Object.entries(sizes).map(([runId, n]) =>
        store.append(runId, makeEnvelopes(runId, 1, n), { expectedSeq: 0 }),
      ),
    )
    const served = await feed.readAfter(2, 100)
    stop()
    await store.close()

    const db = new Database(path, { readonly: true })
    const stored = db
      .prepare(
        `SELECT e.pos AS position, r.run_id AS runId, e.seq FROM skein_events e
          JOIN skein_runs r USING (run_no) WHERE e.pos > 2 ORDER BY e.pos`,
      )
      .all()
    db.close()
    expect(stored).toHaveLength(46)
    expect(
      served.map((e) => ({ position: e.position, runId: e.event.runId, seq: e.event.seq })),
    ).toEqual(stored)
    for (const [runId, n] of Object.entries(sizes)) {
      const seqs = (stored as Array<{ runId: string; seq: number }>)
        .filter((row) => row.runId === runId)
        .map((row) => row.seq)
      expect(seqs).toEqual(Array.from({ length: n }, (_, i) => i + 1))
    }
  })

  it('reads back a group whose request failed its check, the others written whole', async () => {
    const store = sqliteStore({ path: join(dir, `inserts-${++files}.db`) })
    await store.append('x', makeEnvelopes('x', 1, 1), { expectedSeq: 0 })
    const outcomes = await Promise.allSettled([
      store.append('a', makeEnvelopes('a', 1, 18), { expectedSeq: 0 }),
      store.append('x', makeEnvelopes('x', 1, 5), { expectedSeq: 0 }), // stale: x is at 1
      store.append('b', makeEnvelopes('b', 1, 18), { expectedSeq: 0 }),
    ])
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect((await store.read('a')).map((e) => e.id)).toEqual(
      makeEnvelopes('a', 1, 18).map((e) => e.id),
    )
    expect((await store.read('b')).map((e) => e.seq)).toEqual(
      Array.from({ length: 18 }, (_, i) => i + 1),
    )
    expect(await store.tail('x')).toBe(1)
    await store.close()
  })

  it("finds a run by its definition and status after its row's name changed and after it did not", async () => {
    const store = sqliteStore({ path: join(dir, `inserts-${++files}.db`) })
    const meta = (definitionName: string, status: 'running' | 'completed', updatedAt: number) => ({
      status,
      kind: 'workflow',
      definitionName,
      definitionVersion: '1',
      createdAt: 1,
      updatedAt,
      nextDeadlineAt: null,
    })
    const byDefinition = async (definitionName: string, status: 'running' | 'completed') =>
      (await store.listSummaries({ definitionName, status: [status], limit: 10 })).runs.map(
        (run) => run.runId,
      )
    await store.append('r', makeEnvelopes('r', 1, 1), {
      expectedSeq: 0,
      meta: meta('a', 'running', 1),
    })
    // Same name (the UPDATE leaves the definition's index entry alone), then a new name.
    await store.append('r', makeEnvelopes('r', 2, 1), {
      expectedSeq: 1,
      meta: meta('a', 'running', 2),
    })
    expect(await byDefinition('a', 'running')).toEqual(['r'])
    await store.append('r', makeEnvelopes('r', 3, 1), {
      expectedSeq: 2,
      meta: meta('b', 'running', 3),
    })
    expect(await byDefinition('a', 'running')).toEqual([])
    expect(await byDefinition('b', 'running')).toEqual(['r'])
    await store.append('r', makeEnvelopes('r', 4, 1), {
      expectedSeq: 3,
      meta: meta('b', 'completed', 4),
    })
    expect(await byDefinition('b', 'running')).toEqual([])
    expect(await byDefinition('b', 'completed')).toEqual(['r'])
    // A fresh connection reads the row (no cached copy) and compares against it.
    await store.close()
    const reopened = sqliteStore({ path: store.path })
    await reopened.append('r', makeEnvelopes('r', 5, 1), {
      expectedSeq: 4,
      meta: meta('c', 'completed', 5),
    })
    expect((await reopened.listSummaries({ definitionName: 'c', limit: 10 })).runs).toHaveLength(1)
    await reopened.close()
  })
})
