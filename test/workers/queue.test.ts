import { bearerAuth, createEngine, httpWorkerQueue } from 'skein'
import { manualClock } from 'skein/testing'
import { workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { FLOWS, workerEffects } from './helpers.js'

const task = (effectId: string, type = 'a') => ({
  runId: 'r',
  effectId,
  attempt: 1,
  type,
  input: null,
})

describe('httpWorkerQueue', () => {
  it('filters by type, honours max, long-polls until a dispatch', async () => {
    const q = httpWorkerQueue()
    q.dispatch(task('1', 'a'))
    q.dispatch(task('2', 'b'))
    q.dispatch(task('3', 'a'))
    expect((await q.claim({ types: ['a'], max: 5 })).map((t) => t.effectId)).toEqual(['1', '3'])
    const waiting = q.claim({ types: ['c'], waitMs: 10_000 })
    q.dispatch(task('4', 'c'))
    expect((await waiting).map((t) => t.effectId)).toEqual(['4'])
    expect(q.size).toBe(1)
    const aborted = new AbortController()
    const idle = q.claim({ types: ['z'], waitMs: 10_000, signal: aborted.signal })
    aborted.abort()
    expect(await idle).toEqual([])
  })

  it('cancel of an unclaimed task drops it and acknowledges; a claimed one is not', async () => {
    const q = httpWorkerQueue()
    q.dispatch(task('1'))
    expect(q.cancel?.(task('1'))).toBe('cancelled')
    expect(q.size).toBe(0)
    q.dispatch(task('2'))
    await q.claim()
    expect(q.cancel?.(task('2'))).toBeUndefined()
  })

  it('the claim route records started and hands out tasks; cancel of an unclaimed task is acknowledged', async () => {
    const queue = httpWorkerQueue()
    const engine = createEngine({
      modules: [workflow({ definitions: FLOWS }), workerEffects],
      worker: queue,
      clock: manualClock(),
      authorize: bearerAuth({ worker: 'tok' }),
    })
    const flow = FLOWS.find((f) => f.name === 'flow-w.plain')!
    await engine.start(flow, undefined, { runId: 'q1' })
    await engine.start(flow, undefined, { runId: 'q2' })
    const res = (await engine.fetch(
      new Request('http://x/workers/tasks/claim', {
        method: 'POST',
        headers: { authorization: 'Bearer tok', 'content-type': 'application/json' },
        body: JSON.stringify({ types: ['w.plain'], max: 1 }),
      }),
    ))!
    expect(res.status).toBe(200)
    const { tasks } = await res.json()
    expect(tasks).toHaveLength(1)
    const claimed = tasks[0].runId
    const other = claimed === 'q1' ? 'q2' : 'q1'
    expect((await engine.inspectRun(claimed)).effects[0].status).toBe('started')
    await engine.cancel(other)
    await (await engine.runtime).idle()
    const types = (await engine.getEvents(other)).map((e) => e.type)
    expect(types.slice(-1)).toEqual(['runtime.effect.cancelled'])
    const bad = (await engine.fetch(
      new Request('http://x/workers/tasks/claim', {
        method: 'POST',
        headers: { authorization: 'Bearer tok', 'content-type': 'application/json' },
        body: JSON.stringify({ max: 0 }),
      }),
    ))!
    expect(bad.status).toBe(400)
    await engine.stop()
  })
})
