import { describe, expect } from 'vitest'
import {
  createEngine,
  defineProjection,
  type Engine,
  memoryStore,
  type Observation,
} from '../../index.js'
import { decision, pendingApprovals } from '../../modules/approval/index.js'
import { rejection } from '../rejection.js'
import type { ContractCase } from './case.js'
import { gated, LOOPER, suiteModules } from './definitions.js'

const noteCount = defineProjection<number>({
  initial: 0,
  reduce: (n, e) => (e.type === 'app.note' ? n + 1 : n),
})

async function parkedWithNotes(engine: Engine, notes: number) {
  const { runId } = await engine.start(gated, { orderId: 'o', amount: 1 })
  for (let i = 0; i < notes; i++) await engine.signal(runId, [{ type: 'app.note', payload: { i } }])
  return runId
}

/** Snapshots, trimming, the run cache, replay, projections, inspection, observer, limits. */
export function snapshotCases(test: ContractCase): void {
  describe('snapshots, trim, cache', () => {
    test('snapshots on park and every snapshotEvery events', async (w) => {
      const engine = await w.boot({ snapshotEvery: 5 })
      const snapshots = w.store.snapshots!
      const { runId } = await engine.start(gated, { orderId: 'o', amount: 1 })
      const first = await snapshots.list(runId)
      expect(first).toEqual([(await engine.getRun(runId)).lastSeq])
      await engine.signal(
        runId,
        Array.from({ length: 12 }, (_, i) => ({ type: 'app.note', payload: { i } })),
      )
      const seqs = await snapshots.list(runId)
      expect(seqs.at(-1)).toBe((await engine.getRun(runId)).lastSeq)
    })

    test('trimAfterSnapshot removes only events covered by a kept snapshot, bounded by coverage', async (w) => {
      let covered = 3
      const engine = await w.boot({
        trimAfterSnapshot: { keepSnapshots: 2, coverage: async () => ({ throughSeq: covered }) },
      })
      const runId = await parkedWithNotes(engine, 3)
      const bounds = await w.store.bounds(runId)
      expect(bounds.head).toBe(4) // coverage stopped the trim at seq 3
      covered = 1000
      await engine.signal(runId, [{ type: 'app.note', payload: {} }])
      const kept = await w.store.snapshots!.list(runId)
      expect(kept).toHaveLength(2)
      expect((await w.store.bounds(runId)).head).toBe(kept[0] + 1)
      // the state folds the same from the kept snapshots
      expect((await engine.project(runId, 'pendingApprovals')).items).toHaveLength(1)
      expect(await engine.replayTo(runId, 2)).toBeNull()
      expect(await engine.replayTo(runId, kept[0] + 1)).not.toBeNull()
    })

    test('a run cache hit is validated against the store tail (another writer moved it)', async (w) => {
      const engine = await w.boot({ runCacheSize: 10 })
      const other = await w.another()
      const runId = await parkedWithNotes(engine, 1)
      const [item] = (await engine.project(runId, pendingApprovals)).items
      await other.signal(runId, [decision(item.approvalId, 'approve')])
      const state = await engine.getRun(runId)
      expect(state.status).toBe('completed')
    })

    test('getRun after a restart folds snapshot + tail; fold(log) equals snapshot + fold(tail)', async (w) => {
      const engine = await w.boot({ snapshotEvery: 3 })
      const runId = await parkedWithNotes(engine, 7)
      const viaSnapshot = await engine.getRun(runId)
      const fresh = createEngine({ modules: suiteModules(w.control), store: memoryStore() })
      try {
        const full = await fresh.start(gated, { orderId: 'o', amount: 1 }, { runId: 'copy' })
        expect(full.state.status).toBe(viaSnapshot.status)
      } finally {
        await fresh.stop()
      }
      const restarted = await w.restart()
      expect(await restarted.getRun(runId)).toEqual(viaSnapshot)
    })
  })

  describe('replay, projections, inspection', () => {
    test('replayTo returns before/after of one event, null past the tail, and never executes effects', async (w) => {
      const engine = await w.boot()
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
      expect((await engine.getRun(runId)).lastSeq).toBe(tail)
    })

    test('projects registered projections by name or object and ad-hoc ones from the log', async (w) => {
      const engine = await w.boot()
      const runId = await parkedWithNotes(engine, 3)
      expect(await engine.project(runId, noteCount)).toBe(3)
      expect((await engine.project(runId, 'pendingApprovals')).items[0].status).toBe('pending')
      expect((await rejection(engine.project(runId, 'nope'))).code).toBe('PROJECTION_NOT_FOUND')
    })

    test('inspectRun shows threads, open waits, deadlines and log bounds', async (w) => {
      const engine = await w.boot()
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

  describe('observer and limits', () => {
    test('an observer that throws or rejects never affects a run; observations carry runId and time', async (w) => {
      const seen: Observation[] = []
      let n = 0
      const engine = await w.boot({
        observer: (o) => {
          seen.push(o)
          if (n++ % 2) throw new Error('observer bug')
          return Promise.reject(new Error('async observer bug'))
        },
      })
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

    test('maxWakeIterations stops a runaway kind with WAKE_LIMIT_EXCEEDED; committed events stay and wake continues', async (w) => {
      const engine = await w.boot({ maxWakeIterations: 3 })
      const error = await rejection(
        engine.startRun({ kind: LOOPER.kind, definitionName: LOOPER.name, runId: 'loop' }),
      )
      expect(error.code).toBe('WAKE_LIMIT_EXCEEDED')
      const tail = (await engine.getEvents('loop')).length
      expect(tail).toBeGreaterThan(100)
      expect((await rejection(engine.wake('loop'))).code).toBe('WAKE_LIMIT_EXCEEDED')
      expect((await engine.getEvents('loop')).length).toBeGreaterThan(tail)
    })
  })
}
