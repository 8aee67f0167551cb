import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import {
  type ArchivedRun,
  type ArchiveSink,
  defineEffect,
  defineInput,
  defineModule,
  type Engine,
  jsonlArchive,
  readArchive,
} from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { storeKinds } from '../support/store-kinds.js'
import { untilSwept } from '../support/swept.js'
import { tempDirs } from '../support/temp-dirs.js'

// Archive before delete (docs/data-lifecycle.md, "Archives"): the retention sweep writes each
// run to the sink, deletes it only once the sink holds it, and restoreRun brings it back with
// the same events, state and replay.

const kinds = storeKinds('archive')
const newEngine = enginesStoppedAfterEach()
const { fresh: freshDir } = tempDirs('skein-archive-')

const fx = defineModule({
  namespace: 'ar',
  events: { go: defineInput(z.object({ note: z.string() })) },
  effects: { step: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n * 2 }) },
})
const job = defineWorkflow({
  name: 'job',
  nodes: {
    a: { run: (ctx) => ctx.invoke('ar.step', { n: 21 }) },
    w: { after: ['a'], run: (ctx) => ctx.waitFor('ar.go') },
  },
})
const modules = [fx, workflow({ definitions: [job] })]

/** Runs `n` jobs to completion; their logs, states and last replay steps, by run id. */
async function finishedRuns(engine: Engine, n: number, prefix: string) {
  const originals = new Map<string, { events: unknown; state: unknown; replay: unknown }>()
  for (let i = 0; i < n; i += 8) {
    await Promise.all(
      Array.from({ length: Math.min(8, n - i) }, async (_, j) => {
        const runId = `${prefix}-${i + j}`
        await engine.start(job, undefined, { runId, wait: 'settled' })
        await engine.signal(runId, [{ type: 'ar.go', payload: { note: `secret ${runId}` } }])
      }),
    )
  }
  for (let i = 0; i < n; i++) {
    const runId = `${prefix}-${i}`
    const events = await engine.getEvents(runId)
    originals.set(runId, {
      events,
      state: await engine.getRun(runId),
      replay: await engine.replayTo(runId, events.length),
    })
  }
  return originals
}

async function archived(path: string): Promise<ArchivedRun[]> {
  const runs: ArchivedRun[] = []
  for await (const run of readArchive(path)) runs.push(run)
  return runs
}

describe.each(kinds)('archive and restore on $name', (kind) => {
  const N = kind.name === 'memory' ? 50 : 1000
  it(`archives ${N} runs before deleting them; restored, each log, state and replay are the original`, async () => {
    const clock = manualClock()
    const archiveDir = freshDir()
    const storage = kind.fresh()
    const engine = newEngine({
      store: storage.open(),
      modules,
      clock,
      retention: {
        finishedAfterMs: 60_000,
        batchSize: 200,
        intervalMs: 1000,
        archive: jsonlArchive({ dir: archiveDir }),
      },
    })
    const originals = await finishedRuns(engine, N, kind.name)
    const running = await engine.start(job, undefined, { runId: 'still-running', wait: 'settled' })
    await clock.advance(61_000)
    const sweptAt = performance.now()
    await untilSwept(engine, clock, N)
    const sweepMs = performance.now() - sweptAt
    const status = await engine.retention()
    expect(status).toMatchObject({ archive: `jsonl:${archiveDir}`, archivedTotal: N })
    expect(status.lastSweep?.error).toBeUndefined()
    for (const runId of originals.keys()) {
      await expect(engine.getRun(runId)).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    }
    expect((await engine.getRun(running.runId)).status).toBe('running')

    const runs = await archived(archiveDir)
    expect(runs.map((r) => r.runId).sort()).toEqual([...originals.keys()].sort())
    const restoredAt = performance.now()
    for (let i = 0; i < runs.length; i += 8) {
      const restored = await Promise.all(runs.slice(i, i + 8).map((r) => engine.restoreRun(r)))
      for (const r of restored) expect(r.restored).toBe(true)
    }
    const restoreMs = performance.now() - restoredAt
    for (const [runId, original] of originals) {
      const events = await engine.getEvents(runId)
      expect(events).toEqual(original.events)
      expect(await engine.getRun(runId)).toEqual(original.state)
      expect(await engine.replayTo(runId, events.length)).toEqual(original.replay)
    }
    // Restoring again is a no-op; the listing has them again.
    expect(await engine.restoreRun(runs[0])).toMatchObject({ restored: false })
    const listed = await engine.listRunSummaries({ limit: 1000, status: 'completed' })
    expect(listed.runs.length).toBe(Math.min(N, 1000))
    console.log(
      `SCORE archive-restore store=${kind.name} runs=${N} identical=${N} sweep_runs_per_s=${Math.round((N / sweepMs) * 1000)} restore_runs_per_s=${Math.round((N / restoreMs) * 1000)}`,
    )
  }, 300_000)

  it('a crash between archive and delete loses nothing and archives nothing twice', async () => {
    const clock = manualClock()
    const archiveDir = freshDir()
    const files = jsonlArchive({ dir: archiveDir })
    let crash = true
    // Writes durably, then fails as a process killed before its delete would.
    const crashing: ArchiveSink = {
      name: 'crashing',
      async write(runs) {
        await files.write(runs)
        if (crash) throw new Error('killed after archiving')
      },
    }
    const storage = kind.fresh()
    const engine = newEngine({
      store: storage.open(),
      modules,
      clock,
      retention: { finishedAfterMs: 60_000, batchSize: 4, intervalMs: 1000, archive: crashing },
    })
    const originals = await finishedRuns(engine, 6, `crash-${kind.name}`)
    await clock.advance(61_000)
    await untilSwept(engine, clock, (s) => s.lastSweep?.error !== undefined)
    expect((await engine.retention()).lastSweep?.error).toMatch(/killed after archiving/)
    for (const runId of originals.keys()) {
      expect((await engine.getRun(runId)).status).toBe('completed')
    }
    crash = false
    await clock.advance(1000)
    await untilSwept(engine, clock, 6)
    const runs = await archived(archiveDir)
    expect(runs.map((r) => r.runId).sort()).toEqual([...originals.keys()].sort())
    const [day] = readdirSync(archiveDir)
    expect(readdirSync(join(archiveDir, day)).filter((f) => f.endsWith('.jsonl.gz')).length).toBe(6)
    expect(readdirSync(join(archiveDir, day)).filter((f) => f.endsWith('.tmp'))).toEqual([])
  }, 60_000)

  it('a batch delete keeps a run whose tail moved after it was archived', async () => {
    const store = kind.fresh().open()
    const engine = newEngine({ store, modules })
    await finishedRuns(engine, 2, `moved-${kind.name}`)
    const tail = await store.tail(`moved-${kind.name}-0`)
    const deleted = await store.deleteFinished!({
      statuses: ['completed'],
      updatedBefore: Number.MAX_SAFE_INTEGER,
      limit: 2,
      at: 1,
      reason: 'retention',
      runs: [
        { runId: `moved-${kind.name}-0`, tail: tail - 1 },
        { runId: `moved-${kind.name}-1`, tail },
      ],
    })
    expect(deleted.map((d) => d.runId)).toEqual([`moved-${kind.name}-1`])
    expect(await store.tail(`moved-${kind.name}-0`)).toBe(tail)
  })
})

describe('restore refuses what it cannot restore whole', () => {
  it('a run in the store already, a log with a gap, another format: nothing is written', async () => {
    const engine = newEngine({ modules })
    await finishedRuns(engine, 1, 'here')
    const events = await engine.getEvents('here-0')
    const run: ArchivedRun = {
      format: 1,
      runId: 'here-0',
      head: 1,
      tail: events.length,
      status: 'completed',
      kind: 'workflow',
      definitionName: 'job',
      archivedAt: 1,
      events,
      snapshot: null,
    }
    expect(await engine.restoreRun(run)).toMatchObject({ restored: false })
    const other = { ...run, events: events.map((e) => ({ ...e, id: `x${e.id}` })) }
    await expect(
      engine.restoreRun({ ...other, tail: events.length - 1, events: other.events.slice(0, -1) }),
    ).rejects.toMatchObject({
      code: 'START_CONFLICT',
    })
    const moved = (seq: number) => events.map((e) => ({ ...e, runId: 'gap', seq }))
    await expect(
      engine.restoreRun({ ...run, runId: 'gap', events: moved(1) }),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
    await expect(engine.restoreRun({ ...run, format: 3 })).rejects.toThrow(/newer/)
    await expect(engine.getRun('gap')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
  })

  it('retention refuses an archive that is not a sink', () => {
    expect(() =>
      newEngine({ modules, retention: { finishedAfterMs: 1000, archive: {} as never } }),
    ).toThrow(/archive sink/)
  })
})
