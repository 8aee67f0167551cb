import { describe, expect } from 'vitest'
import { rejection } from '../rejection.js'
import type { ContractCase } from './case.js'
import { charge, external, hanging, noting } from './definitions.js'

const attempt = (n: number) => (e: { type: string; payload: unknown }) =>
  e.type === 'runtime.effect.attempt.started' && (e.payload as { attempt: number }).attempt === n

/** In-process effects: atomic emits, timeouts, retries, no executor, operator retry. */
export function effectCases(test: ContractCase): void {
  describe('effects', () => {
    test('ctx.emit events are appended atomically with the result', async (w) => {
      const engine = await w.boot()
      const { runId, state } = await engine.start(noting)
      expect(state.status).toBe('completed')
      const events = await engine.getEvents(runId)
      const i = events.findIndex((e) => e.type === 'suite.noted')
      expect(events[i + 1].type).toBe('runtime.effect.completed')
      expect(events[i].effectId).toBe(events[i + 1].effectId)
      expect(events[i].payload).toEqual({ note: 'emitted with the result' })
    })

    test('a hung attempt times out through the clock, is recorded and retried, then fails', async (w) => {
      const engine = await w.boot()
      // The attempt never settles, so the call resolves with the run waiting on it.
      const started = await engine.start(hanging, undefined, { runId: 'h1' })
      expect(started.state.status).toBe('running')
      await w.clock.advance(1000)
      // The timed-out attempt settles (aborted) after the deadline's pass: idle waits for that
      // pass, which records the failure and schedules the retry.
      await w.idle()
      await w.clock.advance(10)
      await w.until('h1', attempt(2))
      await w.clock.advance(1000)
      await w.until('h1', (e) => e.type === 'runtime.run.failed')
      const state = await engine.getRun('h1')
      expect(state.status).toBe('failed')
      const types = await w.types('h1')
      expect(types.filter((t) => t === 'runtime.effect.timed_out')).toHaveLength(2)
      expect(types.filter((t) => t === 'runtime.effect.attempt.started')).toHaveLength(2)
    })

    test('an effect with no handler and no worker is ambiguous; an operator retry runs it once handled', async (w) => {
      const engine = await w.boot()
      const { runId, state } = await engine.start(external)
      expect(state.status).toBe('running')
      const status = await engine.inspectRun(runId)
      expect(status.effects[0]).toMatchObject({ type: 'suite.external', status: 'ambiguous' })
      expect(status.effects[0].lastError?.code).toBe('NO_EXECUTOR')
      // Restarted with a worker, the operator's retry hands the effect to it.
      const handled = await w.restart({ worker: w.worker })
      const { effectId } = status.effects[0]
      await handled.retryEffect(runId, effectId)
      expect(w.worker.dispatched).toEqual([
        expect.objectContaining({ runId, effectId, type: 'suite.external', input: { n: 1 } }),
      ])
      const done = await handled.workerCallback(runId, {
        effectId,
        attempt: w.worker.dispatched[0].attempt,
        kind: 'complete',
        result: 'handled',
      })
      expect(done.status).toBe('completed')
      expect(done.output).toEqual({ a: 'handled', b: { got: 'handled' } })
    })

    test('operator retry of a final failure re-opens the node, thread and run', async (w) => {
      const engine = await w.boot()
      const { runId, state } = await engine.start(charge)
      expect(state.status).toBe('failed')
      const [effect] = (await engine.inspectRun(runId)).effects
      expect(effect.status).toBe('failed')
      w.control.gatewayDown = false
      const retried = await engine.retryEffect(runId, effect.effectId, {
        identity: 'ops@example.com',
      })
      expect(retried.status).toBe('completed')
      expect((retried.output as { a: unknown }).a).toEqual({ charged: true })
      const scheduled = (await engine.getEvents(runId)).find(
        (e) => e.type === 'runtime.effect.retry.scheduled',
      )!
      expect(scheduled.payload).toMatchObject({ reason: 'operator', by: 'ops@example.com' })
      expect(scheduled.origin).toBe('operator')
      const again = await rejection(engine.retryEffect(runId, effect.effectId))
      expect(again.code).toBe('EFFECT_NOT_RETRYABLE')
      expect((await rejection(engine.retryEffect(runId, 'nope'))).code).toBe('EFFECT_NOT_FOUND')
    })
  })
}
