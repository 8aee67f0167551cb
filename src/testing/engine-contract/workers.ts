import { describe, expect } from 'vitest'
import type { Definition } from '../../index.js'
import type { ContractCase } from './case.js'
import { job, local } from './definitions.js'
import type { EngineWorld } from './world.js'

type CallbackKind = 'started' | 'heartbeat' | 'complete' | 'fail' | 'cancelled'

/** Starts `flow` and returns the id of the effect its node `a` invoked. */
async function startFlow(w: EngineWorld, flow: Definition, runId: string) {
  await w.engine.start(flow, undefined, { runId })
  await w.idle()
  const requested = (await w.engine.getEvents(runId)).find(
    (e) => e.type === 'runtime.effect.requested',
  )
  return requested!.effectId!
}

/** The event types `fn` appended to the run (once the engine is idle again). */
async function appended(w: EngineWorld, runId: string, fn: () => Promise<unknown>) {
  const before = await w.store.tail(runId)
  await fn()
  await w.idle()
  return w.types(runId, before + 1)
}

const effectOf = async (w: EngineWorld, runId: string, effectId: string) =>
  (await w.engine.inspectRun(runId)).effects.find((e) => e.effectId === effectId)

/** Effects run by an external worker that reports back through `workerCallback`. */
export function workerCases(test: ContractCase): void {
  describe('workers', () => {
    const cb = (
      w: EngineWorld,
      runId: string,
      effectId: string,
      attempt: number,
      kind: CallbackKind,
      extra: object = {},
    ) => w.engine.workerCallback(runId, { effectId, attempt, kind, ...extra })

    test('complete records events and result atomically and the run continues', async (w) => {
      await w.boot({ worker: w.worker })
      const effectId = await startFlow(w, job, 'r1')
      expect(w.worker.dispatched).toEqual([
        expect.objectContaining({ runId: 'r1', effectId, attempt: 1, type: 'suite.job' }),
      ])
      const types = await appended(w, 'r1', () =>
        cb(w, 'r1', effectId, 1, 'complete', {
          result: { ok: 1 },
          events: [{ type: 'suite.shipped', payload: { id: 's1' } }],
        }),
      )
      expect(types.slice(0, 2)).toEqual(['suite.shipped', 'runtime.effect.completed'])
      const state = await w.engine.getRun('r1')
      expect(state.status).toBe('completed')
      expect(state.output).toMatchObject({ b: { got: { ok: 1 } } })
    })

    test('fail is retried by policy; retryable: false fails finally', async (w) => {
      await w.boot({ worker: w.worker })
      const effectId = await startFlow(w, job, 'r1')
      const types = await appended(w, 'r1', () =>
        cb(w, 'r1', effectId, 1, 'fail', { error: { code: 'BUSY', message: 'busy' } }),
      )
      expect(types).toEqual(['runtime.effect.failed', 'runtime.effect.retry.scheduled'])
      expect(await effectOf(w, 'r1', effectId)).toMatchObject({
        status: 'retry_scheduled',
        lastError: { code: 'BUSY', message: 'busy' },
      })
      await w.clock.advance(100)
      await w.idle()
      expect(w.worker.dispatched.map((t) => t.attempt)).toEqual([1, 2])
      await cb(w, 'r1', effectId, 2, 'fail', { error: 'card declined', retryable: false })
      await w.idle()
      expect(await effectOf(w, 'r1', effectId)).toMatchObject({ status: 'failed', attempt: 2 })
      expect((await w.engine.getRun('r1')).status).toBe('failed')
    })

    test('stale attempts, duplicate completions, in-process effects and finished runs write nothing', async (w) => {
      await w.boot({ worker: w.worker })
      const effectId = await startFlow(w, job, 'r1')
      expect(await appended(w, 'r1', () => cb(w, 'r1', effectId, 2, 'complete'))).toEqual([])
      expect(await appended(w, 'r1', () => cb(w, 'r1', effectId, 0, 'started'))).toEqual([])
      expect(await appended(w, 'r1', () => cb(w, 'r1', 'nope', 1, 'complete'))).toEqual([])
      await cb(w, 'r1', effectId, 1, 'complete', { result: 1 })
      await w.idle()
      expect((await w.engine.getRun('r1')).status).toBe('completed')
      // duplicate completion on a finished run
      for (const kind of ['started', 'heartbeat', 'complete', 'fail', 'cancelled'] as const)
        expect(await appended(w, 'r1', () => cb(w, 'r1', effectId, 1, kind))).toEqual([])

      const localEffect = await startFlow(w, local, 'r2')
      expect(await appended(w, 'r2', () => cb(w, 'r2', localEffect, 1, 'complete'))).toEqual([])
    })

    test("a dispatched effect survives a restart: the worker's callback to the new engine completes the run", async (w) => {
      await w.boot({ worker: w.worker })
      const effectId = await startFlow(w, job, 'r1')
      const engine = await w.restart({ worker: w.worker })
      expect((await engine.inspectRun('r1')).effects[0]).toMatchObject({
        effectId,
        status: 'dispatched',
      })
      const state = await engine.workerCallback('r1', {
        effectId,
        attempt: 1,
        kind: 'complete',
        result: { shipped: true },
      })
      expect(state.status).toBe('completed')
      expect(state.output).toEqual({ a: { shipped: true }, b: { got: { shipped: true } } })
      // Nothing was dispatched twice: the new engine read the dispatch from the log.
      expect(w.worker.dispatched.map((t) => t.attempt)).toEqual([1])
    })
  })
}
