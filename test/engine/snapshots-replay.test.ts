import { createEngine, defineProjection, type Engine, memoryStore, type Observation } from 'skein'
import { approval, decision, pendingApprovals } from 'skein/approval'
import { manualClock } from 'skein/testing'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { definitions, gated, makeEngine, testEffects } from '../support/fixtures.js'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('snapshots-replay')
let engine: Engine
afterEach(() => engine?.stop())

const noteCount = defineProjection<number>({
  initial: 0,
  reduce: (n, e) => (e.type === 'app.note' ? n + 1 : n),
})

async function parkedWithNotes(e: Engine, notes: number) {
  const { runId } = await e.start(gated, { orderId: 'o', amount: 1 })
  for (let i = 0; i < notes; i++) await e.signal(runId, [{ type: 'app.note', payload: { i } }])
  return runId
}

describe.each(kinds)('snapshots, trim, cache ($name store)', (kind) => {
  it('snapshots on park and every snapshotEvery events', async () => {
    const store = kind.fresh().open()
    ;({ engine } = makeEngine({ store, snapshotEvery: 5 }))
    const { runId } = await engine.start(gated, { orderId: 'o', amount: 1 })
    const first = await store.snapshots!.list(runId)
    expect(first).toEqual([(await engine.getRun(runId)).lastSeq])
    await engine.signal(
      runId,
      Array.from({ length: 12 }, (_, i) => ({ type: 'app.note', payload: { i } })),
    )
    const seqs = await store.snapshots!.list(runId)
    expect(seqs.at(-1)).toBe((await engine.getRun(runId)).lastSeq)
  })

  it('trimAfterSnapshot removes only events covered by a kept snapshot, bounded by coverage', async () => {
    const store = kind.fresh().open()
    let covered = 3
    ;({ engine } = makeEngine({
      store,
      trimAfterSnapshot: { keepSnapshots: 2, coverage: async () => ({ throughSeq: covered }) },
    }))
    const runId = await parkedWithNotes(engine, 3)
    const bounds = await store.bounds(runId)
    expect(bounds.head).toBe(4) // coverage stopped the trim at seq 3
    covered = 1000
    await engine.signal(runId, [{ type: 'app.note', payload: {} }])
    const kept = await store.snapshots!.list(runId)
    expect(kept).toHaveLength(2)
    expect((await store.bounds(runId)).head).toBe(kept[0] + 1)
    // the state folds the same from the kept snapshots
    expect((await engine.project(runId, 'pendingApprovals')).items).toHaveLength(1)
    expect(await engine.replayTo(runId, 2)).toBeNull()
    expect(await engine.replayTo(runId, kept[0] + 1)).not.toBeNull()
  })

  it('a run cache hit is validated against the store tail (another writer moved it)', async () => {
    const storage = kind.fresh()
    const clock = manualClock()
    const mods = () => [workflow({ definitions }), approval(), testEffects]
    engine = createEngine({ modules: mods(), store: storage.open(), clock, runCacheSize: 10 })
    const other = createEngine({ modules: mods(), store: storage.open(), clock })
    const runId = await parkedWithNotes(engine, 1)
    const [item] = (await engine.project(runId, pendingApprovals)).items
    await other.signal(runId, [decision(item.approvalId, 'approve')])
    const state = await engine.getRun(runId)
    expect(state.status).toBe('completed')
    await other.stop()
  })

  it('getRun after a restart folds snapshot + tail; fold(log) equals snapshot + fold(tail)', async () => {
    const storage = kind.fresh()
    ;({ engine } = makeEngine({ store: storage.open(), snapshotEvery: 3 }))
    const runId = await parkedWithNotes(engine, 7)
    const viaSnapshot = await engine.getRun(runId)
    const fresh = makeEngine({ store: memoryStore() }).engine
    const full = await fresh.start(gated, { orderId: 'o', amount: 1 }, { runId: 'copy' })
    expect(full.state.status).toBe(viaSnapshot.status)
    const restarted = makeEngine({ store: storage.open() }).engine
    expect(await restarted.getRun(runId)).toEqual(viaSnapshot)
    await fresh.stop()
    await restarted.stop()
  })
})

describe.each(kinds)('replay, projections, inspection ($name store)', (kind) => {
  it('replayTo returns before/after of one event, null past the tail, and never executes effects', async () => {
    ;({ engine } = makeEngine({ store: kind.fresh().open() }))
    const runId = await parkedWithNotes(engine, 2)
    const tail = (await engine.getRun(runId)).lastSeq
    const step = await engine.replayTo(runId, 1)
    expect(step?.event.type).toBe('runtime.run.started')
    expect(step?.before.lastSeq).toBe(0)
    expect(step?.after.kind).toBe('workflow')
    const last = await engine.replayTo(runId, tail)
    expect(last?.after.lastSeq).toBe(tail)
    expect(last?.before.lastSeq).toBe(tail - 1)
    expect(await engine.replayTo(runId, tail + 1)).toBeNull()
    expect(await engine.replayTo(runId, 0)).toBeNull()
  })

  it('projects registered projections by name or object and ad-hoc ones from the log', async () => {
    ;({ engine } = makeEngine({ store: kind.fresh().open() }))
    const runId = await parkedWithNotes(engine, 3)
    expect(await engine.project(runId, noteCount)).toBe(3)
    expect((await engine.project(runId, 'pendingApprovals')).items[0].status).toBe('pending')
    expect((await engine.project(runId, 'nope').catch((e) => e)).code).toBe('PROJECTION_NOT_FOUND')
  })

  it('inspectRun shows threads, open waits, deadlines and log bounds', async () => {
    ;({ engine } = makeEngine({ store: kind.fresh().open() }))
    const runId = await parkedWithNotes(engine, 0)
    const status = await engine.inspectRun(runId)
    expect(status.status).toBe('running')
    expect(status.threads).toHaveLength(1)
    expect(status.waits[0].on).toMatchObject({ event: { type: 'approval.decided' } })
    expect(status.head).toBe(1)
    expect(status.tail).toBe((await engine.getRun(runId)).lastSeq)
    expect(await engine.listRuns()).toEqual([runId])
    const [summary] = (await engine.listRunSummaries()).runs
    expect(summary).toMatchObject({
      runId,
      status: 'running',
      kind: 'workflow',
      definitionName: 'gated',
    })
  })
})

describe.each(kinds)('observer and limits ($name store)', (kind) => {
  it('an observer that throws or rejects never affects a run; observations carry runId and time', async () => {
    const seen: Observation[] = []
    let n = 0
    ;({ engine } = makeEngine({
      store: kind.fresh().open(),
      observer: (o) => {
        seen.push(o)
        if (n++ % 2) throw new Error('observer bug')
        return Promise.reject(new Error('async observer bug'))
      },
    }))
    const runId = await parkedWithNotes(engine, 1)
    expect((await engine.getRun(runId)).status).toBe('running')
    const types = new Set(seen.map((o) => o.type))
    for (const t of ['run.started', 'wake.started', 'append', 'run.parked', 'snapshot.saved'])
      expect(types).toContain(t)
    for (const o of seen) {
      expect(typeof o.runId).toBe('string')
      expect(typeof o.at).toBe('number')
    }
  })

  it('maxWakeIterations stops a runaway kind with WAKE_LIMIT_EXCEEDED; committed events stay and wake continues', async () => {
    ;({ engine } = makeEngine({ store: kind.fresh().open(), maxWakeIterations: 3 }))
    const error = await engine
      .startRun({ kind: 'looper', definitionName: 'forever', runId: 'loop' })
      .catch((e) => e)
    expect(error.code).toBe('WAKE_LIMIT_EXCEEDED')
    const tail = (await engine.getEvents('loop')).length
    expect(tail).toBeGreaterThan(100)
    expect((await engine.wake('loop').catch((e) => e)).code).toBe('WAKE_LIMIT_EXCEEDED')
    expect((await engine.getEvents('loop')).length).toBeGreaterThan(tail)
  })
})
