import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type ArchivedRun, jsonlArchive, readArchive } from 'skein'
import { createActorHost } from 'skein/actor'
import { makeEnvelopes } from 'skein/testing'
import { workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { appendRuns } from '../support/finished-runs.js'
import { storeKinds } from '../support/store-kinds.js'
import { tempDirs } from '../support/temp-dirs.js'

// The edges of archiving (docs/data-lifecycle.md, "Archives" and "Restoring"): runs that
// cannot be archived do not hold the sweep back, a killed write's temporary files go, and a
// trimmed archive whose snapshot is not a fold is refused whole.

const kinds = storeKinds('archive-gaps')
const newEngine = enginesStoppedAfterEach()
const { fresh: freshDir } = tempDirs('skein-archive-gaps-')
const modules = [workflow({ definitions: [] })]

const until = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 2000; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('never happened')
}

describe.each(kinds)('archiving retention on $name', (kind) => {
  it('goes on past the oldest runs it cannot archive, keeping and reporting them', async () => {
    const store = kind.fresh().open()
    // The oldest three pages: logs trimmed with no snapshot covering them (not archivable whole).
    await appendRuns(store, {
      prefix: 'trimmed',
      count: 30,
      events: 4,
      status: 'completed',
      updatedAt: 1,
    })
    for (let i = 0; i < 30; i++) await store.trim!(`trimmed-${i}`, 3)
    await appendRuns(store, {
      prefix: 'whole',
      count: 25,
      events: 4,
      status: 'completed',
      updatedAt: 1,
    })
    const archiveDir = freshDir()
    const engine = newEngine({
      store,
      modules,
      retention: {
        finishedAfterMs: 1000,
        batchSize: 10,
        intervalMs: 3_600_000,
        archive: jsonlArchive({ dir: archiveDir }),
      },
    })
    await engine.ready()
    await until(async () => (await engine.retention()).lastSweep?.finishedAt != null)
    const { lastSweep, deletedTotal, archivedTotal } = await engine.retention()
    expect(lastSweep?.error).toBeUndefined()
    expect({ deletedTotal, archivedTotal, kept: lastSweep?.kept }).toEqual({
      deletedTotal: 25,
      archivedTotal: 25,
      kept: 30,
    })
    for (let i = 0; i < 30; i++)
      expect(await store.bounds(`trimmed-${i}`)).toEqual({ head: 3, tail: 4 })
    for (let i = 0; i < 25; i++) expect(await store.tail(`whole-${i}`)).toBe(0)
    const archived: string[] = []
    for await (const run of readArchive(archiveDir)) archived.push(run.runId)
    expect(archived.sort()).toEqual(Array.from({ length: 25 }, (_, i) => `whole-${i}`).sort())
  })
})

const archivedRun = (runId: string, head: number, tail: number): ArchivedRun => ({
  format: 1,
  runId,
  head,
  tail,
  status: 'completed',
  kind: 'workflow',
  definitionName: 'job',
  archivedAt: 1,
  events: makeEnvelopes(runId, head, tail - head + 1),
  snapshot: head > 1 ? { runId, seq: head - 1, createdAt: 1, format: 1, data: {} } : null,
})

describe('a JSONL archive', () => {
  it("removes another process's leftover temporary files, and never its own", async () => {
    const archiveDir = freshDir()
    const sink = jsonlArchive({ dir: archiveDir })
    const day = join(archiveDir, '2023-11-14') // the day makeEnvelopes' events start
    mkdirSync(day, { recursive: true })
    // A write killed before its rename (another pid), and one of this process in flight.
    writeFileSync(join(day, 'r-1.r-1-e1.jsonl.gz.99999999.tmp'), 'half a file')
    writeFileSync(join(day, `r-9.r-9-e1.jsonl.gz.${process.pid}.tmp`), 'being written')
    await sink.write([archivedRun('r-2', 1, 2)])
    expect(readdirSync(day).sort()).toEqual(
      ['r-2.r-2-e1.jsonl.gz', `r-9.r-9-e1.jsonl.gz.${process.pid}.tmp`].sort(),
    )
  })
})

describe('restoring', () => {
  it('refuses a trimmed archive whose snapshot is not a fold, and writes nothing', async () => {
    const engine = newEngine({ modules })
    await expect(engine.restoreRun(archivedRun('trimmed-1', 3, 4))).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(/trimmed .*snapshot at seq 2/),
    })
    await expect(engine.getRun('trimmed-1')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
  })
})

describe('restoring on an actor host', () => {
  it('refuses an archive without kind or definition, and one its cell cannot write: no cell, no registry entry', async () => {
    const hostDir = freshDir()
    const host = createActorHost({ modules, dir: hostDir, authorize: () => true })
    const restore = (run: unknown) =>
      host.fetch(
        new Request('http://actor.test/operations/restore', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ run }),
        }),
      )
    try {
      const anonymous = await restore({ ...archivedRun('to-cell', 1, 2), kind: null })
      expect(anonymous?.status).toBe(400)
      expect(await anonymous?.json()).toMatchObject({
        error: { code: 'INVALID_REQUEST', message: expect.stringMatching(/kind and definition/) },
      })
      // A trimmed log whose snapshot is not a fold: refused by the cell's engine.
      const unfoldable = await restore(archivedRun('to-cell', 3, 4))
      expect(unfoldable?.status).toBe(400)
      const missing = await host.fetch(new Request('http://actor.test/runs/to-cell'))
      expect(missing?.status).toBe(404)
      expect((await host.registry.list()).runs).toEqual([])
      expect(readdirSync(join(hostDir, 'runs'))).toEqual([])
    } finally {
      await host.stop()
    }
  })
})
