import { bearerAuth } from 'skein'
import { afterEach, describe, expect, it } from 'vitest'
import { effectOf, type Harness, harness, startFlow } from './helpers.js'

let h: Harness
afterEach(() => h?.engine.stop())

const cb = (runId: string, effectId: string, attempt: number, kind: any, extra: object = {}) =>
  h.engine.workerCallback(runId, { effectId, attempt, kind, ...extra })

const refused = async (runId: string, effectId: string) =>
  (await h.engine.retryEffect(runId, effectId).catch((e) => e)).code

describe('operator retry', () => {
  it('from ambiguous (no executor): recorded with who asked, then dispatched', async () => {
    h = harness({ worker: undefined })
    const { runId, effectId } = await startFlow(h, 'w.plain')
    expect(await effectOf(h, runId, effectId)).toMatchObject({
      status: 'ambiguous',
      lastError: { code: 'NO_EXECUTOR' },
    })
    await h.engine.retryEffect(runId, effectId, { identity: { user: 'ops' } })
    const scheduled = (await h.engine.getEvents(runId)).find(
      (e) => e.type === 'runtime.effect.retry.scheduled',
    )!
    expect(scheduled.payload).toMatchObject({ reason: 'operator', by: { user: 'ops' }, attempt: 1 })
    expect(scheduled.origin).toBe('operator')
  })

  it('from timed_out: re-opens the failed node, thread and run, which then complete', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.timed')
    await h.clock.advance(1_000)
    await h.idle()
    await h.clock.advance(10)
    await h.idle()
    await h.clock.advance(1_000)
    await h.idle()
    expect((await h.engine.getRun(runId)).status).toBe('failed')
    expect((await effectOf(h, runId, effectId))?.status).toBe('timed_out')
    const reopened = await h.engine.retryEffect(runId, effectId)
    expect(reopened.status).toBe('running')
    await h.idle()
    expect(h.log.dispatched.map((t) => t.attempt)).toEqual([1, 2, 3])
    await cb(runId, effectId, 3, 'complete', { result: 'third time' })
    await h.idle()
    const state = await h.engine.getRun(runId)
    expect(state.status).toBe('completed')
    expect(state.output).toMatchObject({ b: { got: 'third time' } })
  })

  it('from a final failure, re-opening a failed run', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.once')
    await cb(runId, effectId, 1, 'fail', { error: 'declined', retryable: false })
    await h.idle()
    expect((await h.engine.getRun(runId)).status).toBe('failed')
    expect((await h.engine.retryEffect(runId, effectId)).status).toBe('running')
    await cb(runId, effectId, 2, 'complete', { result: 'ok' })
    await h.idle()
    expect((await h.engine.getRun(runId)).status).toBe('completed')
  })

  it('refused from dispatched, started and retry_scheduled (409); unknown effect 404; finished effect 409', async () => {
    h = harness()
    const { runId, effectId } = await startFlow(h, 'w.plain')
    expect(await refused(runId, effectId)).toBe('EFFECT_NOT_RETRYABLE')
    await cb(runId, effectId, 1, 'started')
    expect(await refused(runId, effectId)).toBe('EFFECT_NOT_RETRYABLE')
    await cb(runId, effectId, 1, 'fail', { error: 'x' })
    expect((await effectOf(h, runId, effectId))?.status).toBe('retry_scheduled')
    expect(await refused(runId, effectId)).toBe('EFFECT_NOT_RETRYABLE')
    expect(await refused(runId, 'no-such-effect')).toBe('EFFECT_NOT_FOUND')
    await h.clock.advance(100)
    await h.idle()
    await cb(runId, effectId, 2, 'complete', { result: 1 })
    await h.idle()
    expect(await refused(runId, effectId)).toBe('EFFECT_NOT_RETRYABLE')
  })

  it('over HTTP: operations token, 409 body, and inspect shows the effect fields', async () => {
    h = harness({ authorize: bearerAuth({ worker: 'w-token', operations: 'o-token' }) })
    const { runId, effectId } = await startFlow(h, 'w.timed')
    const post = (path: string, token: string, body?: unknown) =>
      h.engine.fetch(
        new Request(`http://x${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      ) as Promise<Response>
    const conflict = await post(`/runs/${runId}/effects/${effectId}/retry`, 'o-token')
    expect(conflict.status).toBe(409)
    expect((await conflict.json()).error.code).toBe('EFFECT_NOT_RETRYABLE')
    expect((await post(`/runs/${runId}/effects/nope/retry`, 'o-token')).status).toBe(404)
    expect((await post(`/runs/${runId}/effects/${effectId}/retry`, 'w-token')).status).toBe(401)
    const status = await (
      (await h.engine.fetch(new Request(`http://x/runs/${runId}/status`))) as Response
    ).json()
    expect(status.effects).toEqual([
      {
        effectId,
        threadId: expect.any(String),
        type: 'w.timed',
        attempt: 1,
        status: 'dispatched',
        deadlineAt: h.clock.now() + 1_000,
        lastError: null,
      },
    ])
    const callback = await post(`/runs/${runId}/effects/${effectId}/callback`, 'w-token', {
      attempt: 1,
      kind: 'complete',
      result: 'done',
      events: [{ type: 'w.shipped', payload: { id: 1 } }],
    })
    expect(callback.status).toBe(400)
    const ok = await post(`/runs/${runId}/effects/${effectId}/callback`, 'w-token', {
      attempt: 1,
      kind: 'complete',
      result: 'done',
    })
    expect(ok.status).toBe(200)
    const stale = await post(`/runs/${runId}/effects/${effectId}/callback`, 'w-token', {
      attempt: 1,
      kind: 'complete',
      result: 'again',
    })
    expect(stale.status).toBe(200)
    await h.idle()
    expect((await h.engine.getRun(runId)).output).toMatchObject({ b: { got: 'done' } })
  })
})
