import type { Engine } from 'skein'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { control, flush, gated, makeEngine, parentFlow, slowFlow } from '../support/fixtures.js'

let engine: Engine
beforeEach(() => {
  control.slowRelease.length = 0
  control.aborted.length = 0
})
afterEach(() => engine?.stop())

describe('per-run ingress', () => {
  it('over maxPendingRunOperations is RUN_OVERLOADED and writes nothing for the refused ones', async () => {
    ;({ engine } = makeEngine({ maxPendingRunOperations: 4 }))
    const { runId } = await engine.start(gated, { orderId: 'o', amount: 1 })
    const before = (await engine.getRun(runId)).lastSeq
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        engine.signal(runId, [{ type: 'app.note', payload: { i } }]),
      ),
    )
    const refused = results.filter((r) => r.status === 'rejected')
    expect(refused.length).toBe(6)
    for (const r of refused) expect((r as PromiseRejectedResult).reason.code).toBe('RUN_OVERLOADED')
    const events = await engine.getEvents(runId, { fromSeq: before + 1 })
    expect(events.map((e) => (e.payload as any).i)).toEqual([0, 1, 2, 3])
  })

  it('concurrent signals on one run never interleave; the log stays gapless', async () => {
    ;({ engine } = makeEngine())
    const { runId } = await engine.start(gated, { orderId: 'o', amount: 1 })
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        engine.signal(runId, [
          { type: 'app.pair', payload: { i, half: 1 } },
          { type: 'app.pair', payload: { i, half: 2 } },
        ]),
      ),
    )
    const events = (await engine.getEvents(runId)).filter((e) => e.type === 'app.pair')
    for (let k = 0; k < events.length; k += 2) {
      expect((events[k].payload as any).i).toBe((events[k + 1].payload as any).i)
    }
    const all = await engine.getEvents(runId)
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1))
  })

  it('a slow effect in one run blocks neither that run’s signals nor other runs', async () => {
    ;({ engine } = makeEngine())
    const slow = engine.start(slowFlow, undefined, { runId: 'slow', wait: 'settled' })
    await flush()
    expect(control.slowRelease).toHaveLength(1)
    const other = await engine.start(gated, { orderId: 'o', amount: 1 })
    expect(other.state.status).toBe('running')
    const sig = await engine.getRun('slow')
    expect(sig.status).toBe('running')
    control.slowRelease[0]()
    const done = await slow
    expect(done.state.status).toBe('completed')
  })
})

describe('cancel', () => {
  it('cancelling a run aborts its in-flight effect and records the cancellation', async () => {
    ;({ engine } = makeEngine())
    const started = engine.start(slowFlow, undefined, { runId: 'c1' })
    await flush()
    const state = await engine.cancel('c1')
    expect(state.status).toBe('cancelled')
    expect(control.aborted).toHaveLength(1)
    await started
    const types = (await engine.getEvents('c1')).map((e) => e.type)
    expect(types).toContain('runtime.cancel.requested')
    expect(types).toContain('runtime.effect.cancelled')
    expect(types.slice(-2)).toEqual(['runtime.thread.cancelled', 'runtime.run.cancelled'])
    expect((await engine.cancel('c1')).status).toBe('cancelled')
  })

  it('cancelling one child thread cancels its subtree only; the parent sees the failure', async () => {
    ;({ engine } = makeEngine())
    const started = engine.start(parentFlow, undefined, { runId: 'p1' })
    await flush()
    const running = await engine.getRun('p1')
    const child = Object.values(running.threads).find((t) => t.parentThreadId !== null)!
    const state = await engine.cancel('p1', child.threadId)
    expect(state.threads[child.threadId].status).toBe('cancelled')
    expect(control.aborted).toHaveLength(1)
    await started
    const final = await engine.getRun('p1')
    expect(final.status).toBe('failed')
    expect(final.error?.message).toMatch(/child/)
  })
})
