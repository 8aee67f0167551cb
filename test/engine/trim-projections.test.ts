import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineModule, defineProjection, type EngineOptions, memoryStore } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { freshPath } from '../support/temp-dirs.js'

const newEngine = enginesStoppedAfterEach()
const dir = mkdtempSync(join(tmpdir(), 'skein-trim-projections-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const ticks = defineProjection({
  initial: { n: 0 },
  reduce: (s: { n: number }, e) => (e.type === 'ext.tick' ? { n: s.n + 1 } : s),
})
const counter = defineModule({ namespace: 'counter', projections: { ticks } })
const parked = defineWorkflow({
  name: 'parked',
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.done') } },
})
const modules = () => [workflow({ definitions: [parked] }), counter]
const tick = [{ type: 'ext.tick', payload: {} }]

function engineOn(path: string, extra: Partial<EngineOptions> = {}) {
  const store = sqliteStore({ path })
  const engine = newEngine({ modules: modules(), store, clock: manualClock(), ...extra })
  return { engine, store }
}

describe('projections and trimming', () => {
  it('turning on trimAfterSnapshot for an existing store keeps projection values', async () => {
    const path = freshPath(dir, 'turn-on-trim.db')
    const first = engineOn(path)
    const { runId } = await first.engine.start(parked)
    for (let i = 0; i < 3; i++) await first.engine.signal(runId, tick)
    expect(await first.engine.project(runId, 'ticks')).toEqual({ n: 3 })
    await first.engine.stop()
    await first.store.close()

    const trimming = { trimAfterSnapshot: { keepSnapshots: 1 } }
    const second = engineOn(path, trimming)
    expect(await second.engine.project(runId, 'ticks')).toEqual({ n: 3 })
    expect(await second.engine.project(runId, ticks)).toEqual({ n: 3 })
    await second.engine.signal(runId, tick)
    expect(await second.engine.project(runId, 'ticks')).toEqual({ n: 4 })
    const { head, tail } = await second.store.bounds(runId)
    expect(head).toBeGreaterThan(1) // the events were trimmed: only the snapshot holds 1..head-1
    expect(head).toBe(tail + 1)
    await second.engine.stop()
    await second.store.close()

    const third = engineOn(path, trimming)
    expect(await third.engine.project(runId, 'ticks')).toEqual({ n: 4 })
    await third.engine.signal(runId, tick)
    expect(await third.engine.project(runId, 'ticks')).toEqual({ n: 5 })
    await third.engine.stop()
    await third.store.close()
  })

  it('a snapshot says what it holds: none without trimming, every registered projection with it', async () => {
    const store = memoryStore()
    const plain = newEngine({ modules: modules(), store, clock: manualClock() })
    const { runId } = await plain.start(parked)
    await plain.signal(runId, tick)
    const untrimmed = await store.snapshots!.latest(runId)
    expect((untrimmed!.data as any).projections).toEqual({})
    expect((untrimmed!.data as any).protocol).toBe(1)
    const trimming = newEngine({
      modules: modules(),
      store,
      clock: manualClock(),
      trimAfterSnapshot: { keepSnapshots: 1 },
    })
    await trimming.signal(runId, tick)
    const held = await store.snapshots!.latest(runId)
    // Every registered projection: the counter and the workflow module's own `workflowNodes`.
    expect(Object.keys((held!.data as any).projections).sort()).toEqual(['ticks', 'workflowNodes'])
    expect((held!.data as any).projections.ticks).toEqual({ n: 2 })
  })

  it('a projection rebuilds from an older snapshot when a newer one lacks it', async () => {
    const store = memoryStore()
    const trimming = { trimAfterSnapshot: { keepSnapshots: 2 } }
    const a = newEngine({ modules: modules(), store, clock: manualClock(), ...trimming })
    const { runId } = await a.start(parked)
    for (let i = 0; i < 3; i++) await a.signal(runId, tick)
    expect((await store.bounds(runId)).head).toBeGreaterThan(1)
    // An engine without the counter module cannot keep `ticks` current: its snapshots drop it.
    const b = newEngine({
      modules: [workflow({ definitions: [parked] })],
      store,
      clock: manualClock(),
    })
    // Two signals: a park with one event since the last snapshot writes none.
    await b.signal(runId, tick)
    await b.signal(runId, tick)
    const latest = await store.snapshots!.latest(runId)
    // It keeps only what it folds itself (the workflow module's `workflowNodes`).
    expect(Object.keys((latest!.data as any).projections)).toEqual(['workflowNodes'])
    const c = newEngine({ modules: modules(), store, clock: manualClock(), ...trimming })
    expect(await c.project(runId, 'ticks')).toEqual({ n: 5 })
    await c.signal(runId, tick)
    expect(await c.project(runId, 'ticks')).toEqual({ n: 6 })
    expect((await store.snapshots!.latest(runId))!.data as any).toMatchObject({
      projections: { ticks: { n: 6 } },
    })
  })

  it('a projection whose events were trimmed before any snapshot held it is PROJECTION_UNAVAILABLE (410), never a partial value', async () => {
    const store = memoryStore()
    const trimming = { trimAfterSnapshot: { keepSnapshots: 1 } }
    const before = newEngine({ modules: modules(), store, clock: manualClock(), ...trimming })
    const { runId } = await before.start(parked)
    for (let i = 0; i < 2; i++) await before.signal(runId, tick)
    expect((await store.bounds(runId)).head).toBeGreaterThan(1)
    const later = defineModule({
      namespace: 'later',
      projections: { lateTicks: ticks },
    })
    const after = newEngine({
      modules: [...modules(), later],
      store,
      clock: manualClock(),
      ...trimming,
    })
    await after.signal(runId, tick)
    expect(await after.project(runId, 'ticks')).toEqual({ n: 3 })
    const late = await after.project(runId, 'lateTicks').catch((e) => e)
    expect(late.code).toBe('PROJECTION_UNAVAILABLE')
    expect(late.message).toContain(runId)
    const adHoc = defineProjection({ initial: 0, reduce: (n: number) => n + 1 })
    expect((await after.project(runId, adHoc).catch((e) => e)).code).toBe('PROJECTION_UNAVAILABLE')
    const response = (await after.fetch(
      new Request(`http://skein.test/runs/${runId}/projections/lateTicks`),
    ))!
    expect(response.status).toBe(410)
    expect((await response.json()).error.code).toBe('PROJECTION_UNAVAILABLE')
    // Trimming goes on behind snapshots that hold every projection still available.
    await after.signal(runId, tick)
    expect(await after.project(runId, 'ticks')).toEqual({ n: 4 })
    const { head, tail } = await store.bounds(runId)
    expect(head).toBe(tail + 1)
  })
})
