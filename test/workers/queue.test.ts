import { bearerAuth, createEngine, httpWorkerQueue, memoryStore } from 'skein'
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

/** A queue bound as an engine binds it at boot. */
const bound = () =>
  httpWorkerQueue().bind({ tasks: memoryStore().workerTasks!, clock: manualClock(), owner: 'o' })

describe('httpWorkerQueue', () => {
  it('refuses calls until an engine binds it to its store', async () => {
    await expect(httpWorkerQueue().claim()).rejects.toThrow(/createEngine/)
  })

  it('filters by type, honours max, long-polls until a dispatch', async () => {
    const q = bound()
    await q.dispatch(task('1', 'a'))
    await q.dispatch(task('2', 'b'))
    await q.dispatch(task('3', 'a'))
    expect((await q.claim({ types: ['a'], max: 5 })).map((t) => t.effectId)).toEqual(['1', '3'])
    const waiting = q.claim({ types: ['c'], waitMs: 10_000 })
    await q.dispatch(task('4', 'c'))
    expect((await waiting).map((t) => t.effectId)).toEqual(['4'])
    expect((await q.claim({ max: 5 })).map((t) => t.effectId)).toEqual(['2'])
    const aborted = new AbortController()
    const idle = q.claim({ types: ['z'], waitMs: 10_000, signal: aborted.signal })
    aborted.abort()
    expect(await idle).toEqual([])
  })

  it('on a shared store, stores the tasks dispatched in one event-loop turn with one enqueue', async () => {
    const tasks = memoryStore().workerTasks!
    const calls: number[] = []
    const counted = {
      ...tasks,
      shared: true,
      enqueue: (list: any, now: number) => {
        calls.push(list.length)
        return tasks.enqueue(list, now)
      },
    }
    const q = httpWorkerQueue().bind({ tasks: counted, clock: manualClock(), owner: 'o' })
    await Promise.all(['1', '2', '3'].map((id) => q.dispatch(task(id))))
    await q.dispatch(task('4'))
    expect(calls).toEqual([3, 1])
    expect((await q.claim({ max: 10 })).map((t) => t.effectId)).toEqual(['1', '2', '3', '4'])
  })

  it('a failed group enqueue fails every dispatch of that turn; a cancel before it is stored acknowledges', async () => {
    const tasks = memoryStore().workerTasks!
    let fail = true
    const flaky = {
      ...tasks,
      shared: true,
      enqueue: (list: any, now: number) =>
        fail ? Promise.reject(new Error('disk full')) : tasks.enqueue(list, now),
    }
    const q = httpWorkerQueue().bind({ tasks: flaky, clock: manualClock(), owner: 'o' })
    const results = await Promise.allSettled([q.dispatch(task('1')), q.dispatch(task('2'))])
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected'])
    fail = false
    const pending = q.dispatch(task('3'))
    expect(await q.cancel?.(task('3'))).toBe('cancelled')
    await pending
    expect(await q.claim({ max: 10 })).toEqual([])
  })

  it('cancel of an unclaimed task drops it and acknowledges; a claimed one is not', async () => {
    const q = bound()
    await q.dispatch(task('1'))
    expect(await q.cancel?.(task('1'))).toBe('cancelled')
    expect(await q.claim()).toEqual([])
    await q.dispatch(task('2'))
    await q.claim()
    expect(await q.cancel?.(task('2'))).toBeUndefined()
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

  it('POST /workers/tasks/callbacks applies many outcomes, each answering on its own', async () => {
    const engine = createEngine({
      modules: [workflow({ definitions: FLOWS }), workerEffects],
      worker: httpWorkerQueue(),
      clock: manualClock(),
      authorize: bearerAuth({ worker: 'tok' }),
    })
    const post = async (path: string, body: unknown) =>
      (await engine.fetch(
        new Request(`http://x${path}`, {
          method: 'POST',
          headers: { authorization: 'Bearer tok', 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      ))!
    const flow = FLOWS.find((f) => f.name === 'flow-w.plain')!
    await engine.start(flow, undefined, { runId: 'b1' })
    await engine.start(flow, undefined, { runId: 'b2' })
    const { tasks } = await (await post('/workers/tasks/claim', { max: 10 })).json()
    expect(tasks).toHaveLength(2)
    const malformed = await post('/workers/tasks/callbacks', {
      callbacks: [
        { ...tasks[0], kind: 'complete' },
        { runId: 'b2', kind: 'complete' },
      ],
    })
    expect(malformed.status).toBe(400)
    expect((await engine.getRun('b1')).status).toBe('running')
    const res = await post('/workers/tasks/callbacks', {
      callbacks: [
        ...tasks.map((t: any) => ({
          runId: t.runId,
          effectId: t.effectId,
          attempt: t.attempt,
          kind: 'complete',
          result: { n: t.runId },
        })),
        { runId: 'nope', effectId: 'e', attempt: 1, kind: 'complete' },
      ],
    })
    expect(res.status).toBe(200)
    const { results } = await res.json()
    expect(results.map((r: any) => r.status ?? r.error.code)).toEqual([
      'completed',
      'completed',
      'RUN_NOT_FOUND',
    ])
    expect((await engine.getRun('b2')).output).toMatchObject({ b: { got: { n: 'b2' } } })
    await engine.stop()
  })
  it('a claim carrying callbacks applies them first and answers each in results', async () => {
    const engine = createEngine({
      modules: [workflow({ definitions: FLOWS }), workerEffects],
      worker: httpWorkerQueue(),
      clock: manualClock(),
      authorize: bearerAuth({ worker: 'tok' }),
    })
    const claim = async (body: unknown) =>
      (await engine.fetch(
        new Request('http://x/workers/tasks/claim', {
          method: 'POST',
          headers: { authorization: 'Bearer tok', 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      ))!
    const flow = FLOWS.find((f) => f.name === 'flow-w.plain')!
    await engine.start(flow, undefined, { runId: 'c1' })
    const first = await (await claim({ max: 10 })).json()
    expect(first).toEqual({ tasks: [expect.objectContaining({ runId: 'c1' })] })
    await engine.start(flow, undefined, { runId: 'c2' })
    const [task] = first.tasks
    const done = { runId: 'c1', effectId: task.effectId, attempt: task.attempt, kind: 'complete' }
    const malformed = await claim({ max: 10, callbacks: [{ ...done, attempt: 'one' }] })
    expect(malformed.status).toBe(400)
    expect((await engine.getRun('c1')).status).toBe('running')
    expect((await engine.inspectRun('c2')).effects[0].status).toBe('dispatched')
    const res = await claim({
      max: 10,
      callbacks: [
        { ...done, result: { n: 'c1' } },
        { runId: 'nope', effectId: 'e', attempt: 1, kind: 'complete' },
      ],
    })
    expect(res.status).toBe(200)
    const { tasks, results } = await res.json()
    expect(results.map((r: any) => r.status ?? r.error.code)).toEqual([
      'completed',
      'RUN_NOT_FOUND',
    ])
    expect(tasks.map((t: any) => t.runId)).toEqual(['c2'])
    expect((await engine.getRun('c1')).output).toMatchObject({ b: { got: { n: 'c1' } } })
    await engine.stop()
  })
})
