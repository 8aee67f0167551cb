import { afterEach, describe, expect, it } from 'vitest'
import { effectOf, type Harness, harness, recordingWorker, startFlow } from './helpers.js'

let h: Harness
afterEach(() => h?.engine.stop())

const cb = (runId: string, effectId: string, attempt: number, kind: any, extra: object = {}) =>
  h.engine.workerCallback(runId, { effectId, attempt, kind, ...extra })

/** Calls `fn` and returns the event types it appended (after quiescence). */
async function appended(runId: string, fn: () => Promise<unknown>) {
  const before = await h.tail(runId)
  await fn()
  await h.idle()
  return h.typesAfter(runId, before)
}

describe('dispatch', () => {
  it('records dispatched { attempt, deadlineAt, timeouts } and hands the task over after the commit', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.timed')
    const events = await h.engine.getEvents(runId)
    const requested = events.find(
      (e) => e.type === 'runtime.effect.requested' && (e.payload as any).type === 'w.timed',
    )!
    expect((requested.payload as any).execution).toBe('worker')
    const dispatched = events.find((e) => e.type === 'runtime.effect.dispatched')!
    const t0 = h.clock.now()
    expect(dispatched.payload).toEqual({
      effectId,
      attempt: 1,
      deadlineAt: t0 + 1_000,
      timeout: 'schedule_to_start',
      timeouts: { startToCloseMs: 5_000, heartbeatMs: 2_000, cancellationTimeoutMs: 3_000 },
    })
    expect(h.log.dispatched).toEqual([
      expect.objectContaining({ runId, effectId, attempt: 1, type: 'w.timed', input: { n: 1 } }),
    ])
    expect(await effectOf(h, runId, effectId)).toMatchObject({
      status: 'dispatched',
      deadlineAt: t0 + 1_000,
    })
  })

  it('a worker that handles a type takes it even when a handler exists', async () => {
    const rec = recordingWorker()
    h = harness({ worker: { ...rec.worker, handles: ['w.local'] } })
    const { status } = await startFlow(h, 'w.local')
    expect(status.effects[0]).toMatchObject({ type: 'w.local', status: 'dispatched' })
    expect(rec.log.dispatched).toHaveLength(1)
  })
})

describe('callbacks from dispatched', () => {
  it('started records attempt.started with start-to-close and heartbeat deadlines', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.timed')
    await h.clock.advance(100)
    const t = h.clock.now()
    expect(await appended(runId, () => cb(runId, effectId, 1, 'started'))).toEqual([
      'runtime.effect.attempt.started',
    ])
    const started = (await h.engine.getEvents(runId)).at(-1)!
    expect(started.origin).toBe('worker')
    expect(started.payload).toEqual({
      effectId,
      attempt: 1,
      deadlineAt: t + 2_000,
      timeout: 'heartbeat',
      closeAt: t + 5_000,
    })
  })

  it('heartbeat before started implies started', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.timed')
    expect(await appended(runId, () => cb(runId, effectId, 1, 'heartbeat'))).toEqual([
      'runtime.effect.attempt.started',
    ])
  })

  it("a worker's long failure message is cut once, saying how much was left out", async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.plain')
    const long = 'z'.repeat(5_000)
    await cb(runId, effectId, 1, 'fail', { error: { code: 'BUSY', message: long } })
    await h.idle()
    const failed = (await h.engine.getEvents(runId)).find(
      (e) => e.type === 'runtime.effect.failed',
    )!
    expect((failed.payload as any).error.message).toMatch(/^z{4096}… \(904 more characters\)$/)
  })

  it('an unsolicited cancelled writes nothing', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.plain')
    expect(await appended(runId, () => cb(runId, effectId, 1, 'cancelled'))).toEqual([])
  })
})

describe('callbacks from started', () => {
  it('duplicate started and heartbeat without heartbeatMs write nothing', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.plain')
    await cb(runId, effectId, 1, 'started')
    expect(await appended(runId, () => cb(runId, effectId, 1, 'started'))).toEqual([])
    expect(await appended(runId, () => cb(runId, effectId, 1, 'heartbeat'))).toEqual([])
    expect(await appended(runId, () => cb(runId, effectId, 1, 'cancelled'))).toEqual([])
  })

  it('heartbeat moves the deadline, never past start-to-close', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.timed')
    await cb(runId, effectId, 1, 'started')
    const closeAt = h.clock.now() + 5_000
    await h.clock.advance(1_500)
    await cb(runId, effectId, 1, 'heartbeat')
    expect((await effectOf(h, runId, effectId))?.deadlineAt).toBe(h.clock.now() + 2_000)
    await h.clock.advance(1_500)
    await cb(runId, effectId, 1, 'heartbeat')
    const last = (await h.engine.getEvents(runId)).at(-1)!
    expect(last.payload).toMatchObject({ deadlineAt: closeAt, timeout: 'start_to_close' })
  })

  it('complete and fail work from started too', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.once')
    await cb(runId, effectId, 1, 'started')
    const types = await appended(runId, () => cb(runId, effectId, 1, 'fail', { error: 'boom' }))
    expect(types.slice(0, 1)).toEqual(['runtime.effect.failed'])
    expect(
      (await h.engine.getEvents(runId)).find((e) => e.type === 'runtime.effect.failed')!.payload,
    ).toMatchObject({ final: true })
  })
})

describe('ignored callbacks: 200, nothing written', () => {
  it('a retry-scheduled effect ignores callbacks for its old attempt', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.plain')
    await cb(runId, effectId, 1, 'fail', { error: 'x' })
    await h.idle()
    for (const kind of ['started', 'heartbeat', 'complete', 'fail', 'cancelled'])
      expect(await appended(runId, () => cb(runId, effectId, 1, kind))).toEqual([])
  })

  it('invalid events in a completion are InvalidEventError and nothing is written', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.plain')
    const before = await h.tail(runId)
    const bad = await cb(runId, effectId, 1, 'complete', {
      result: 1,
      events: [{ type: 'w.shipped', payload: { id: 7 } }],
    }).catch((e) => e)
    expect(bad.code).toBe('INVALID_EVENT')
    const runtimeEvent = await cb(runId, effectId, 1, 'complete', {
      events: [{ type: 'runtime.run.completed' }],
    }).catch((e) => e)
    expect(runtimeEvent.code).toBe('INVALID_EVENT')
    expect(await h.tail(runId)).toBe(before)
    expect(await effectOf(h, runId, effectId)).toMatchObject({ status: 'dispatched' })
  })

  it('an unknown run is RUN_NOT_FOUND', async () => {
    h = harness()
    const error = await cb('missing', 'e', 1, 'started').catch((e) => e)
    expect(error.code).toBe('RUN_NOT_FOUND')
  })
})
