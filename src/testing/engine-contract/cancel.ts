import { describe, expect } from 'vitest'
import type { ContractCase } from './case.js'
import { gated, parentOfSlow, slowFlow } from './definitions.js'
import { eventually } from './eventually.js'
import type { EngineWorld } from './world.js'

/** Resolves once a `suite.slow` attempt is in flight (its start is committed). */
const slowAttemptStarted = (w: EngineWorld) =>
  eventually(() => w.control.slowRelease.length > 0, 'a suite.slow attempt to start')

/** One writer per run (ingress queue) and cancellation of runs and threads. */
export function cancelCases(test: ContractCase): void {
  describe('per-run ingress', () => {
    test('over maxPendingRunOperations is RUN_OVERLOADED and writes nothing for the refused ones', async (w) => {
      const engine = await w.boot({ maxPendingRunOperations: 4 })
      const { runId } = await engine.start(gated, { orderId: 'o', amount: 1 })
      const before = (await engine.getRun(runId)).lastSeq
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) =>
          engine.signal(runId, [{ type: 'app.note', payload: { i } }]),
        ),
      )
      const refused = results.filter((r) => r.status === 'rejected')
      expect(refused.length).toBe(6)
      for (const r of refused)
        expect((r as PromiseRejectedResult).reason.code).toBe('RUN_OVERLOADED')
      const events = await engine.getEvents(runId, { fromSeq: before + 1 })
      expect(events.map((e) => (e.payload as { i: number }).i)).toEqual([0, 1, 2, 3])
    })

    test('concurrent signals on one run never interleave; the log stays gapless', async (w) => {
      const engine = await w.boot()
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
      expect(events).toHaveLength(100)
      for (let k = 0; k < events.length; k += 2) {
        expect((events[k].payload as { i: number }).i).toBe(
          (events[k + 1].payload as { i: number }).i,
        )
      }
      const all = await engine.getEvents(runId)
      expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1))
    })

    test('a slow effect in one run blocks neither that run’s signals nor other runs', async (w) => {
      const engine = await w.boot()
      const slow = engine.start(slowFlow, undefined, { runId: 'slow', wait: 'settled' })
      await slowAttemptStarted(w)
      const other = await engine.start(gated, { orderId: 'o', amount: 1 })
      expect(other.state.status).toBe('running')
      const sig = await engine.getRun('slow')
      expect(sig.status).toBe('running')
      const signalled = await engine.signal('slow', [{ type: 'app.note', payload: {} }])
      expect(signalled.status).toBe('running')
      w.control.slowRelease[0]()
      const done = await slow
      expect(done.state.status).toBe('completed')
    })
  })

  describe('cancel', () => {
    test('cancelling a run aborts its in-flight effect and records the cancellation', async (w) => {
      const engine = await w.boot()
      const started = engine.start(slowFlow, undefined, { runId: 'c1' })
      await slowAttemptStarted(w)
      const state = await engine.cancel('c1')
      expect(state.status).toBe('cancelled')
      expect(w.control.aborted).toHaveLength(1)
      await started
      const types = await w.types('c1')
      expect(types).toContain('runtime.cancel.requested')
      expect(types).toContain('runtime.effect.cancelled')
      expect(types.slice(-2)).toEqual(['runtime.thread.cancelled', 'runtime.run.cancelled'])
      expect((await engine.cancel('c1')).status).toBe('cancelled')
      expect(await w.types('c1')).toEqual(types) // cancelling a cancelled run writes nothing
    })

    test('cancelling one child thread cancels its subtree only; the parent sees the failure', async (w) => {
      const engine = await w.boot()
      const started = engine.start(parentOfSlow, undefined, { runId: 'p1' })
      await slowAttemptStarted(w)
      const running = await engine.getRun('p1')
      const child = Object.values(running.threads).find((t) => t.parentThreadId !== null)!
      const state = await engine.cancel('p1', child.threadId)
      expect(state.threads[child.threadId].status).toBe('cancelled')
      expect(w.control.aborted).toHaveLength(1)
      await started
      const final = await engine.getRun('p1')
      expect(final.status).toBe('failed')
      expect(final.error?.message).toMatch(/child/)
    })
  })
}
