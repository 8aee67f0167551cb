import { memoryStore } from 'skein'
import { afterEach, describe, expect, it } from 'vitest'
import { effectOf, type Harness, harness, startFlow } from './helpers.js'

let h: Harness
afterEach(() => h?.engine.stop())

const cb = (runId: string, effectId: string, attempt: number, kind: any, extra: object = {}) =>
  h.engine.workerCallback(runId, { effectId, attempt, kind, ...extra })

async function advance(ms: number) {
  await h.clock.advance(ms)
  await h.idle()
}

const timedOut = async (runId: string) =>
  (await h.engine.getEvents(runId))
    .filter((e) => e.type === 'runtime.effect.timed_out')
    .map((e) => (e.payload as any).timeout)

describe('timeouts, from durable deadlines', () => {
  it('schedule-to-start: timed out, retried as a new dispatched attempt, then final (timed_out)', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.timed')
    await advance(999)
    expect(await timedOut(runId)).toEqual([])
    await advance(1)
    expect(await timedOut(runId)).toEqual(['schedule_to_start'])
    expect(h.log.cancelled.map((t) => t.attempt)).toEqual([1])
    await advance(10)
    expect(h.log.dispatched.map((t) => t.attempt)).toEqual([1, 2])
    await advance(1_000)
    expect(await timedOut(runId)).toEqual(['schedule_to_start', 'schedule_to_start'])
    expect(await effectOf(h, runId, effectId)).toMatchObject({
      status: 'timed_out',
      attempt: 2,
      lastError: { code: 'TIMED_OUT' },
    })
    expect((await h.engine.getRun(runId)).status).toBe('failed')
  })

  it('heartbeat: missing a heartbeat times the attempt out', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.timed')
    await cb(runId, effectId, 1, 'started')
    await advance(1_999)
    expect(await timedOut(runId)).toEqual([])
    await advance(1)
    expect(await timedOut(runId)).toEqual(['heartbeat'])
  })

  it('start-to-close: heartbeats cannot keep an attempt past it', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.timed')
    await cb(runId, effectId, 1, 'started')
    for (let i = 0; i < 3; i++) {
      await advance(1_500)
      await cb(runId, effectId, 1, 'heartbeat')
    }
    await advance(499)
    expect(await timedOut(runId)).toEqual([])
    await advance(1)
    expect(await timedOut(runId)).toEqual(['start_to_close'])
    // the late completion of the timed-out attempt is stale
    const before = await h.tail(runId)
    await cb(runId, effectId, 1, 'complete', { result: 'late' })
    expect(await h.tail(runId)).toBe(before)
  })

  it('deadlines survive a restart; the dispatched attempt is not re-dispatched', async () => {
    const store = memoryStore()
    h = harness({}, store)
    const { runId, effectId } = await startFlow(h, 'w.timed')
    await h.engine.stop()
    h = harness({ clock: h.clock }, store)
    await h.engine.ready()
    await h.engine.wake(runId)
    await h.idle()
    expect(h.log.dispatched).toEqual([])
    expect(await effectOf(h, runId, effectId)).toMatchObject({ status: 'dispatched', attempt: 1 })
    await advance(1_000)
    expect(await timedOut(runId)).toEqual(['schedule_to_start'])
    await advance(10)
    expect(h.log.dispatched.map((t) => t.attempt)).toEqual([2])
  })
})

describe('dispatch failures', () => {
  it('with a schedule-to-start deadline: retried by the policy', async () => {
    h = harness()
    h.log.failDispatch = true
    const { runId, effectId } = await startFlow(h, 'w.timed')
    const failed = (await h.engine.getEvents(runId)).find(
      (e) => e.type === 'runtime.effect.failed',
    )!
    expect(failed.payload).toMatchObject({
      attempt: 1,
      final: false,
      error: { code: 'DISPATCH_FAILED' },
    })
    expect(await effectOf(h, runId, effectId)).toMatchObject({ status: 'retry_scheduled' })
    h.log.failDispatch = false
    await advance(10)
    expect(h.log.dispatched.map((t) => t.attempt)).toEqual([2])
  })

  it('without one: ambiguous, and an operator retry dispatches again', async () => {
    h = harness()
    h.log.failDispatch = true
    const { runId, effectId } = await startFlow(h, 'w.plain')
    expect(await effectOf(h, runId, effectId)).toMatchObject({
      status: 'ambiguous',
      lastError: { code: 'DISPATCH_FAILED' },
    })
    h.log.failDispatch = false
    await h.engine.retryEffect(runId, effectId)
    await h.idle()
    expect(h.log.dispatched.map((t) => t.attempt)).toEqual([2])
  })

  it('an asynchronous rejection counts too', async () => {
    h = harness({
      worker: { dispatch: async () => Promise.reject(new Error('503 from queue')) },
    })
    const { runId, effectId } = await startFlow(h, 'w.plain')
    expect(await effectOf(h, runId, effectId)).toMatchObject({ status: 'ambiguous' })
  })
})

describe('cancelling a thread with a worker effect in flight', () => {
  it('records cancel.requested, calls worker.cancel, and the worker acknowledges', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.timed')
    await cb(runId, effectId, 1, 'started')
    const before = await h.tail(runId)
    const state = await h.engine.cancel(runId)
    expect(state.status).toBe('cancelled')
    const types = await h.typesAfter(runId, before)
    expect(types).toContain('runtime.effect.cancel.requested')
    expect(types).not.toContain('runtime.effect.cancelled')
    expect(h.log.cancelled).toEqual([expect.objectContaining({ effectId, attempt: 1 })])
    // a heartbeat while the cancel is pending writes nothing
    const mid = await h.tail(runId)
    await cb(runId, effectId, 1, 'heartbeat')
    expect(await h.tail(runId)).toBe(mid)
    await cb(runId, effectId, 1, 'cancelled')
    await h.idle()
    expect((await h.engine.getEvents(runId)).at(-1)!.type).toBe('runtime.effect.cancelled')
    expect(await effectOf(h, runId, effectId)).toBeUndefined()
    await advance(10_000)
    expect(await h.typesAfter(runId, mid + 1)).toEqual([])
  })

  it('no acknowledgement by cancellationTimeoutMs: ambiguous', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.timed')
    await cb(runId, effectId, 1, 'started')
    await h.engine.cancel(runId)
    await advance(2_999)
    expect(await effectOf(h, runId, effectId)).toMatchObject({ status: 'started' })
    await advance(1)
    expect(await effectOf(h, runId, effectId)).toMatchObject({
      status: 'ambiguous',
      lastError: { code: 'CANCEL_UNACKNOWLEDGED' },
    })
    // a cancelled run's ambiguous effect cannot be retried
    expect((await h.engine.retryEffect(runId, effectId).catch((e) => e)).code).toBe(
      'EFFECT_NOT_RETRYABLE',
    )
  })

  it('a worker that answers cancel() with "cancelled" acknowledges at once', async () => {
    h = harness()
    h.log.cancelAnswer = 'cancelled'
    const { runId, effectId } = await startFlow(h, 'w.plain')
    await h.engine.cancel(runId)
    await h.idle()
    const types = (await h.engine.getEvents(runId)).map((e) => e.type)
    expect(types.slice(-1)).toEqual(['runtime.effect.cancelled'])
    expect(await effectOf(h, runId, effectId)).toBeUndefined()
  })

  it('a completion after the cancel request records the outcome (the action happened)', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.plain')
    await h.engine.cancel(runId)
    await cb(runId, effectId, 1, 'complete', { result: { charged: true } })
    await h.idle()
    expect((await h.engine.getEvents(runId)).at(-1)!.type).toBe('runtime.effect.completed')
    expect((await h.engine.getRun(runId)).status).toBe('cancelled')
  })

  it('the cancellation deadline survives a restart', async () => {
    const store = memoryStore()
    h = harness({}, store)
    const { runId, effectId } = await startFlow(h, 'w.timed')
    await h.engine.cancel(runId)
    await h.engine.stop()
    h = harness({ clock: h.clock }, store)
    await h.engine.ready()
    await advance(3_000)
    expect(await effectOf(h, runId, effectId)).toMatchObject({ status: 'ambiguous' })
  })
})
