import { defineEffect, defineModule, memoryStore, type Observation } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { testEffects } from '../support/fixtures.js'

const newEngine = enginesStoppedAfterEach()

const steps = defineModule({
  namespace: 'steps',
  effects: { step: defineEffect<{ i: number }, { i: number }>({ execute: async (x) => x }) },
})
/** Six effect steps in a row: one wake pass of several commits (each effect is quick). */
const chain = defineWorkflow({
  name: 'chain',
  nodes: Object.fromEntries(
    Array.from({ length: 6 }, (_, i) => [
      `s${i}`,
      { after: i === 0 ? [] : [`s${i - 1}`], run: (ctx: any) => ctx.invoke('steps.step', { i }) },
    ]),
  ),
})

/** The seq each append of `runId` ended at, from the observer. */
function commitEnds(seen: Observation[], runId: string): number[] {
  let seq = 0
  return seen
    .filter((o) => o.type === 'append' && o.runId === runId && o.outcome === 'ok')
    .map((o) => (seq += o.events as number))
}

describe('snapshots inside one wake pass', () => {
  it('snapshotEvery snapshots at the first commit past each interval inside the pass', async () => {
    const store = memoryStore()
    const seen: Observation[] = []
    const engine = newEngine({
      modules: [workflow({ definitions: [chain] }), steps],
      store,
      clock: manualClock(),
      snapshotEvery: 10,
      observer: (o) => void seen.push(o),
    })
    const { runId, state } = await engine.start(chain)
    expect(state.status).toBe('completed')
    const passes = seen.filter((o) => o.type === 'wake.started' && o.runId === runId)
    expect(passes).toHaveLength(1)
    const ends = commitEnds(seen, runId)
    const tail = ends[ends.length - 1]
    expect(tail).toBeGreaterThanOrEqual(34)
    // Where the rule puts them: after the first commit at or past each 10 events since the last.
    const expected: number[] = []
    for (const end of ends) if (end - (expected.at(-1) ?? 0) >= 10) expected.push(end)
    expect(expected.length).toBeGreaterThanOrEqual(3)
    expect(await store.snapshots!.list(runId)).toEqual(expected)
    // Each of them folds to what the log gives up to its seq.
    for (const seq of expected) {
      const step = await engine.replayTo(runId, seq)
      const snapshot = await store.snapshots!.latest(runId, seq)
      expect((snapshot!.data as any).state).toEqual(JSON.parse(JSON.stringify(step!.after)))
    }
  })

  it('a pass that ends in WAKE_LIMIT_EXCEEDED keeps what it committed and snapshots it', async () => {
    const store = memoryStore()
    const engine = newEngine({
      modules: [testEffects],
      store,
      clock: manualClock(),
      maxWakeIterations: 3,
    })
    const error = await engine
      .startRun({ kind: 'looper', definitionName: 'forever', runId: 'loop' })
      .catch((e) => e)
    expect(error.code).toBe('WAKE_LIMIT_EXCEEDED')
    const tail = await store.tail('loop')
    expect(tail).toBeGreaterThan(100)
    expect(await store.snapshots!.list('loop')).toEqual([tail])
    const snapshot = await store.snapshots!.latest('loop')
    expect((snapshot!.data as any).state.lastSeq).toBe(tail)
    // A later wake continues from that snapshot (and halts again at the limit).
    expect((await engine.wake('loop').catch((e) => e)).code).toBe('WAKE_LIMIT_EXCEEDED')
    const next = await store.tail('loop')
    expect(next).toBeGreaterThan(tail)
    expect(await store.snapshots!.list('loop')).toEqual([tail, next])
  })
})
