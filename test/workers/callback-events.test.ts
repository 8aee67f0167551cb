import { bearerAuth } from 'skein'
import { approval } from 'skein/approval'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { FLOWS, type Harness, harness, startFlow, workerEffects } from './helpers.js'

// A worker is a separately authenticated executor of one effect: the events it reports with a
// completion are that effect's module's (local names resolve as in ctx.emit) or application
// events. Another module's events (a gate's decision, a workflow node's result) are refused,
// with nothing written.

let h: Harness
afterEach(() => h?.engine.stop())

const withApproval = () =>
  harness({
    modules: [workflow({ definitions: FLOWS }), workerEffects, approval()],
    authorize: bearerAuth({ worker: 'wk' }),
  })

const complete = (runId: string, effectId: string, events: unknown[]) =>
  h.engine.workerCallback(runId, {
    effectId,
    attempt: 1,
    kind: 'complete',
    result: { ok: 1 },
    events: events as never,
  })

describe('worker callback events', () => {
  it('refuses other modules’ events and the runtime’s, writing nothing', async () => {
    h = withApproval()
    const { runId, effectId } = await startFlow(h, 'w.plain')
    const tail = await h.tail(runId)
    const forged = [
      { type: 'workflow.node.finished', payload: { nodeId: 'a', result: {} } },
      { type: 'approval.decided', payload: { approvalId: 'x', outcome: 'approve' } },
      { type: 'runtime.run.completed', payload: {} },
      { type: 'w.other', payload: {} },
      { type: 'shipped', payload: { id: 7 } },
    ]
    for (const event of forged) {
      const error = await complete(runId, effectId, [event]).catch((e) => e)
      expect(error.code, event.type).toBe('INVALID_EVENT')
      // Over HTTP, with a worker token: the same refusal.
      const response = await h.engine.fetch(
        new Request(`http://skein.test/runs/${runId}/effects/${effectId}/callback`, {
          method: 'POST',
          headers: { authorization: 'Bearer wk', 'content-type': 'application/json' },
          body: JSON.stringify({ attempt: 1, kind: 'complete', result: {}, events: [event] }),
        }),
      )
      expect(response?.status, event.type).toBe(400)
    }
    expect(await h.tail(runId)).toBe(tail)
    expect((await h.engine.getRun(runId)).status).toBe('running')
  })

  it('resolves a local name to its own module and accepts application events', async () => {
    h = withApproval()
    const { runId, effectId } = await startFlow(h, 'w.plain')
    await complete(runId, effectId, [
      { type: 'shipped', payload: { id: 's1' } },
      { type: 'app.audit', payload: { ok: true } },
    ])
    await h.idle()
    const types = (await h.engine.getEvents(runId)).map((e) => e.type)
    expect(types).toContain('w.shipped')
    expect(types).toContain('app.audit')
    expect((await h.engine.getRun(runId)).status).toBe('completed')
  })
})
