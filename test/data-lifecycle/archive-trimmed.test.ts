import { randomBytes } from 'node:crypto'
import {
  type ArchivedRun,
  aesGcmCodec,
  defineEffect,
  defineInput,
  defineModule,
  type Engine,
  type EventStore,
  jsonlArchive,
  memorySnapshotStore,
  type PayloadCodec,
  readArchive,
} from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { type StoreKind, storeKinds } from '../support/store-kinds.js'
import { untilSwept } from '../support/swept.js'
import { tempDirs } from '../support/temp-dirs.js'

// A log trimmed behind a snapshot, archived by the retention sweep and restored
// (docs/data-lifecycle.md, "Restoring"): the same snapshot, the same events and seqs from the
// head on, the same head, the same state and last replay step, on every store; an archive that
// cannot be restored whole writes nothing.

const kinds = storeKinds('archive-trimmed')
const newEngine = enginesStoppedAfterEach()
const { fresh: freshDir } = tempDirs('skein-archive-trimmed-')

const fx = defineModule({
  namespace: 'tr',
  events: { note: defineInput(z.object({ n: z.number() })), go: defineInput(z.object({})) },
  effects: { step: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n * 2 }) },
})
const job = defineWorkflow({
  name: 'job',
  attributes: { customer: 'string' },
  nodes: {
    a: { run: (ctx) => ctx.invoke('tr.step', { n: 21 }) },
    b: { after: ['a'], run: (ctx) => ctx.invoke('tr.step', { n: 2 }) },
    w: { after: ['b'], run: (ctx) => ctx.waitFor('tr.go') },
  },
})
const modules = [fx, workflow({ definitions: [job] })]
/** Snapshots every 4 events, two kept, events behind the older trimmed (the newer covers the tail). */
const trimming = { snapshotEvery: 4, trimAfterSnapshot: { keepSnapshots: 2 } }
/** One snapshot kept: a finished run's log is its last snapshot alone, no event after it. */
const toNothing = { snapshotEvery: 4, trimAfterSnapshot: { keepSnapshots: 1 } }

const until = async (check: () => Promise<boolean>, state?: () => Promise<unknown>) => {
  for (let i = 0; i < 3000; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`never happened: ${JSON.stringify(await state?.())}`)
}

/** What a restored run must give back as its original did. */
async function picture(engine: Engine, store: EventStore, runId: string, codec?: PayloadCodec) {
  const bounds = await store.bounds(runId)
  const events = await engine.getEvents(runId)
  const held = await store.snapshots!.latest(runId, bounds.head - 1)
  // Sealed again when restored (a fresh nonce): what it holds is compared.
  const snapshot =
    codec && held
      ? {
          ...held,
          data: codec.decode(held.data, { part: 'snapshot', runId, id: String(held.seq) }),
        }
      : held
  const listed = await engine.listRunSummaries({
    attributes: { customer: `c-${runId}` },
    limit: 10,
  })
  return {
    bounds,
    events,
    snapshot,
    state: await engine.getRun(runId),
    replay: await engine.replayTo(runId, bounds.tail),
    listed: listed.runs.map((r) => [r.runId, r.status, r.attributes]),
  }
}

async function finishTrimmed(
  engine: Engine,
  store: EventStore,
  n: number,
  prefix: string,
  codec?: PayloadCodec,
  empty = false,
) {
  const originals = new Map<string, Awaited<ReturnType<typeof picture>>>()
  for (let i = 0; i < n; i++) {
    const runId = `${prefix}-${i}`
    await engine.start(job, undefined, {
      runId,
      wait: 'settled',
      attributes: { customer: `c-${runId}` },
    })
    for (let k = 0; k < 3; k++) await engine.signal(runId, [{ type: 'tr.note', payload: { n: k } }])
    await engine.signal(runId, [{ type: 'tr.go', payload: {} }])
    await until(async () => (await engine.getRun(runId)).status === 'completed')
    const shown = await picture(engine, store, runId, codec)
    // Trimmed behind its snapshot: the start event (which set the attributes) is gone.
    expect(shown.bounds.head).toBeGreaterThan(1)
    expect(shown.snapshot?.seq).toBe(shown.bounds.head - 1)
    // Trimmed to nothing: the snapshot covers the tail.
    if (empty) expect([shown.events, shown.bounds.head]).toEqual([[], shown.bounds.tail + 1])
    originals.set(runId, shown)
  }
  return originals
}

async function roundTrip(
  kind: StoreKind,
  prefix: string,
  codec?: PayloadCodec,
  options: { empty?: boolean } = {},
) {
  const empty = options.empty === true
  const clock = manualClock()
  const archiveDir = freshDir()
  const store = kind.fresh().open()
  const engine = newEngine({
    store,
    modules,
    clock,
    ...(empty ? toNothing : trimming),
    codec,
    retention: {
      finishedAfterMs: 60_000,
      batchSize: 10,
      intervalMs: 1000,
      archive: jsonlArchive({ dir: archiveDir }),
    },
  })
  const originals = await finishTrimmed(engine, store, 4, `${prefix}-${kind.name}`, codec, empty)
  await clock.advance(61_000)
  await untilSwept(engine, clock, originals.size)
  for (const runId of originals.keys()) {
    await expect(engine.getRun(runId)).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    expect(await store.snapshots!.list(runId)).toEqual([])
  }

  const runs: ArchivedRun[] = []
  for await (const run of readArchive(archiveDir)) runs.push(run)
  expect(runs.map((r) => r.runId).sort()).toEqual([...originals.keys()].sort())
  for (const run of runs) {
    const original = originals.get(run.runId)!
    expect(run.head).toBe(original.bounds.head)
    expect(run.snapshot?.seq).toBe(run.head - 1)
    if (empty) expect([run.events, run.tail]).toEqual([[], run.head - 1])
    expect(await engine.restoreRun(run)).toEqual({
      runId: run.runId,
      tail: original.bounds.tail,
      status: 'completed',
      restored: true,
    })
  }
  for (const [runId, original] of originals) {
    expect(await picture(engine, store, runId, codec)).toEqual(original)
  }
  // Restoring again is a no-op.
  expect(await engine.restoreRun(runs[0])).toMatchObject({ restored: false })
}

describe.each(kinds)('a trimmed run archived and restored on $name', (kind) => {
  it('comes back with its snapshot, its events and seqs from the head on, its state and replay', async () => {
    await roundTrip(kind, 't')
  }, 60_000)

  it('comes back the same under a payload codec (the archive and the store hold sealed payloads)', async () => {
    await roundTrip(kind, 'sealed', aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' }))
  }, 60_000)

  it('comes back trimmed to nothing (one snapshot kept): its snapshot, its head past the tail, its state and replay', async () => {
    await roundTrip(kind, 'empty', undefined, { empty: true })
  }, 60_000)

  it('comes back trimmed to nothing under a payload codec', async () => {
    await roundTrip(
      kind,
      'empty-sealed',
      aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' }),
      { empty: true },
    )
  }, 60_000)

  it('refuses a trimmed archive without its snapshot, or over a run the store holds: nothing written', async () => {
    const clock = manualClock()
    const archiveDir = freshDir()
    const store = kind.fresh().open()
    const engine = newEngine({
      store,
      modules,
      clock,
      ...trimming,
      retention: {
        finishedAfterMs: 60_000,
        intervalMs: 1000,
        archive: jsonlArchive({ dir: archiveDir }),
      },
    })
    await finishTrimmed(engine, store, 1, `bad-${kind.name}`)
    await clock.advance(61_000)
    await untilSwept(engine, clock, 1)
    const [run] = await (async () => {
      const all: ArchivedRun[] = []
      for await (const r of readArchive(archiveDir)) all.push(r)
      return all
    })()
    const nothingWritten = async () => {
      await expect(engine.getRun(run.runId)).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
      expect(await store.bounds(run.runId)).toEqual({ head: 0, tail: 0 })
      expect(await store.snapshots!.list(run.runId)).toEqual([])
    }
    await expect(engine.restoreRun({ ...run, snapshot: null })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(
        new RegExp(`starts at seq ${run.head} but no snapshot covers seq ${run.head - 1}`),
      ),
    })
    await nothingWritten()
    const wrongSeq = { ...run.snapshot!, seq: run.head - 2 }
    await expect(engine.restoreRun({ ...run, snapshot: wrongSeq })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
    })
    await nothingWritten()
    const unreadable = { ...run.snapshot!, format: 99 }
    await expect(engine.restoreRun({ ...run, snapshot: unreadable })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(/format 99/),
    })
    await nothingWritten()
    // The store refuses a trimmed log over a run it holds, whoever asks.
    expect((await engine.restoreRun(run)).restored).toBe(true)
    const { head } = await store.bounds(run.runId)
    await expect(
      store.restoreTrimmed!(run.runId, {
        snapshot: { ...run.snapshot!, seq: head - 1 },
        events: (await store.read(run.runId)).map((e) => ({ ...e, id: `other-${e.id}` })),
        meta: (await store.listSummaries!({ limit: 1 })).runs[0],
      }),
    ).rejects.toMatchObject({ code: 'SEQ_CONFLICT' })
    expect((await store.read(run.runId))[0].id).toBe(run.events[0].id)
  }, 60_000)
})

describe('a trimmed archive on an engine that cannot write it back whole', () => {
  it('with snapshots kept apart from the store (snapshotStore), is refused and writes nothing', async () => {
    const engine = newEngine({ modules, snapshotStore: memorySnapshotStore() })
    const run: ArchivedRun = {
      format: 1,
      runId: 'apart',
      head: 3,
      tail: 3,
      status: 'completed',
      kind: 'workflow',
      definitionName: 'job',
      archivedAt: 1,
      events: [
        {
          runId: 'apart',
          seq: 3,
          id: 'e3',
          ts: 1,
          type: 'tr.go',
          threadId: null,
          origin: 'external',
          payload: {},
        },
      ],
      snapshot: { runId: 'apart', seq: 2, createdAt: 1, format: 2, data: {} },
    }
    await expect(engine.restoreRun(run)).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(/cannot write a trimmed log back/),
    })
    await expect(engine.getRun('apart')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
  })
})
