import { defineEffect, defineModule, type EventEnvelope, memoryStore } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { flush } from '../support/fixtures.js'

// How a node body's outcome is recorded: its successful first attempt is ephemeral (no effect
// events; `workflow.node.started` records the directive it returned), a failing one is recorded
// as an effect and retried as one, and logs written the older way (an inline effect per body)
// still resume.

const newEngine = enginesStoppedAfterEach()

const echo = defineModule({
  namespace: 'echo',
  effects: { step: defineEffect<{ i: number }, { i: number }>({ execute: async (x) => x }) },
})

const bodyRuns: Record<string, number> = {}
const counted = (id: string, body: (ctx: any) => unknown) => (ctx: any) => {
  bodyRuns[id] = (bodyRuns[id] ?? 0) + 1
  return body(ctx)
}

const make = (definitions: any[], extra: any = {}) => {
  const engine = newEngine({
    modules: [workflow({ definitions }), echo],
    clock: manualClock(),
    ...extra,
  })
  return engine
}

const types = (events: EventEnvelope[]) => events.map((e) => e.type)
const bodyEffects = (events: EventEnvelope[]) =>
  events.filter(
    (e) => e.type === 'runtime.effect.requested' && (e.payload as any).type === 'workflow.node',
  )

describe('workflow node bodies', () => {
  it('a step records no effect events for its body: node.started carries the directive', async () => {
    const chain = defineWorkflow({
      name: 'chain',
      nodes: {
        a: { run: counted('chain.a', (ctx) => ctx.invoke('echo.step', { i: 1 })) },
        b: { after: ['a'], run: counted('chain.b', (ctx) => ({ got: ctx.results.a.i })) },
      },
    })
    const e = make([chain])
    const { runId, state } = await e.start(chain)
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ a: { i: 1 }, b: { got: 1 } })
    const events = await e.getEvents(runId)
    expect(types(events)).toEqual([
      'runtime.run.started',
      'runtime.thread.started',
      'workflow.node.started',
      'runtime.effect.requested',
      'runtime.effect.attempt.started',
      'runtime.effect.completed',
      'workflow.node.finished',
      'workflow.node.started',
      'workflow.node.finished',
      'runtime.thread.completed',
      'runtime.run.completed',
    ])
    expect(bodyEffects(events)).toEqual([])
    expect(events[2].payload).toEqual({
      nodeId: 'a',
      directive: { $directive: 'invoke', effect: 'echo.step', input: { i: 1 } },
    })
    // A value-returning body: started has no directive, finished has the result.
    expect(events[7].payload).toEqual({ nodeId: 'b' })
    expect(events[8].payload).toEqual({ nodeId: 'b', result: { got: 1 } })
    expect(bodyRuns['chain.a']).toBe(1)
    expect(bodyRuns['chain.b']).toBe(1)
    // Nothing ephemeral leaks into the fold: a cold replay of the log gives the same state.
    const replayed = await e.replayTo(runId, events.length)
    expect(replayed?.after).toEqual(state)
  })

  it('a failing body is recorded as an effect and retried as one', async () => {
    let tries = 0
    const flaky = defineWorkflow({
      name: 'flaky-body',
      nodes: {
        a: {
          retry: { maxAttempts: 3, backoffMs: 10 },
          run: () => {
            tries++
            if (tries < 3) throw new Error(`try ${tries}`)
            return { ok: tries }
          },
        },
      },
    })
    const clock = manualClock()
    const e = make([flaky], { clock })
    const { runId, state } = await e.start(flaky)
    expect(state.status).toBe('running')
    let events = await e.getEvents(runId)
    const requested = bodyEffects(events)
    expect(requested).toHaveLength(1)
    expect(requested[0].payload).toMatchObject({ key: 'run:a', execution: 'inline' })
    expect(types(events)).toEqual([
      'runtime.run.started',
      'runtime.thread.started',
      'runtime.effect.requested',
      'runtime.effect.failed',
      'runtime.effect.retry.scheduled',
      'workflow.node.started',
    ])
    for (let i = 0; i < 2; i++) {
      await clock.advance(1_000)
      await (await e.runtime).idle()
    }
    const done = await e.getRun(runId)
    expect(done.status).toBe('completed')
    expect(done.output).toEqual({ a: { ok: 3 } })
    events = await e.getEvents(runId)
    expect(events.filter((ev) => ev.type === 'runtime.effect.failed')).toHaveLength(2)
    expect(events.filter((ev) => ev.type === 'runtime.effect.completed')).toHaveLength(1)
    expect(events.filter((ev) => ev.type === 'workflow.node.started')).toHaveLength(1)
    expect(tries).toBe(3)
  })

  it('a body that fails for good fails the node and the run, with the failure recorded', async () => {
    const broken = defineWorkflow({
      name: 'broken-body',
      nodes: {
        a: {
          run: () => {
            throw new Error('no')
          },
        },
      },
    })
    const e = make([broken])
    const { runId, state } = await e.start(broken)
    expect(state.status).toBe('failed')
    const events = await e.getEvents(runId)
    expect(types(events)).toContain('runtime.effect.failed')
    expect(types(events)).toContain('workflow.node.failed')
    expect(state.error).toMatchObject({ code: 'NODE_FAILED' })
  })

  it('a body that times out is recorded as a timed-out effect and fails the node', async () => {
    const hang = defineWorkflow({
      name: 'hanging-body',
      nodes: { a: { timeoutMs: 50, run: () => new Promise(() => {}) } },
    })
    const clock = manualClock()
    const e = make([hang], { clock })
    const started = e.start(hang, undefined, { runId: 'run_hang' })
    await flush()
    await clock.advance(60)
    const { state } = await started
    expect(state.status).toBe('failed')
    const events = await e.getEvents('run_hang')
    expect(types(events)).toEqual([
      'runtime.run.started',
      'runtime.thread.started',
      'runtime.effect.requested',
      'runtime.effect.timed_out',
      'runtime.effect.failed',
      'workflow.node.started',
      'workflow.node.failed',
      'runtime.thread.failed',
      'runtime.run.failed',
    ])
  })

  it('respects concurrency: a second ready node waits for the first', async () => {
    const starts: string[] = []
    const slow = defineModule({
      namespace: 'slow',
      effects: {
        go: defineEffect<{ id: string }, string>({
          execute: async ({ id }) => {
            starts.push(id)
            return id
          },
        }),
      },
    })
    const pair = defineWorkflow({
      name: 'pair',
      concurrency: 1,
      nodes: {
        x: { run: (ctx) => ctx.invoke('slow.go', { id: 'x' }) },
        y: { run: (ctx) => ctx.invoke('slow.go', { id: 'y' }) },
      },
    })
    const engine = newEngine({ modules: [workflow({ definitions: [pair] }), slow] })
    const { runId, state } = await engine.start(pair)
    expect(state.status).toBe('completed')
    const events = await engine.getEvents(runId)
    const started = events.filter((ev) => ev.type === 'workflow.node.started')
    const finishedX = events.findIndex(
      (ev) => ev.type === 'workflow.node.finished' && (ev.payload as any).nodeId === 'x',
    )
    expect(started.map((ev) => (ev.payload as any).nodeId)).toEqual(['x', 'y'])
    expect(events.indexOf(started[1])).toBeGreaterThan(finishedX)
    expect(starts).toEqual(['x', 'y'])
  })

  it('resumes a log written with an inline effect per body, without running the body again', async () => {
    const store = memoryStore()
    const legacy = defineWorkflow({
      name: 'legacy',
      nodes: {
        a: { run: counted('legacy.a', (ctx) => ctx.invoke('echo.step', { i: 7 })) },
        b: { after: ['a'], run: counted('legacy.b', (ctx) => ({ from: ctx.results.a.i })) },
      },
    })
    const runId = 'run_legacy1'
    const thread = 'thr_legacy1'
    let seq = 0
    const ev = (type: string, payload: unknown, extra: Partial<EventEnvelope> = {}) =>
      ({
        id: `evt_legacy${++seq}`,
        runId,
        seq,
        ts: 1,
        type,
        payload,
        threadId: thread,
        origin: 'runtime',
        ...extra,
      }) as EventEnvelope
    const def = { kind: 'workflow', definitionName: 'legacy', definitionVersion: legacy.version }
    const events = [
      ev(
        'runtime.run.started',
        { ...def, input: null, rootThreadId: thread },
        { threadId: null, origin: 'external' },
      ),
      ev('runtime.thread.started', { threadId: thread, parentThreadId: null, ...def, input: null }),
      ev('workflow.node.started', { nodeId: 'a' }),
      ev(
        'runtime.effect.requested',
        {
          effectId: 'eff_body_a',
          threadId: thread,
          type: 'workflow.node',
          input: { nodeId: 'a' },
          key: 'run:a',
          execution: 'inline',
          retry: { maxAttempts: 1 },
        },
        { effectId: 'eff_body_a' },
      ),
      ev(
        'runtime.effect.completed',
        {
          effectId: 'eff_body_a',
          attempt: 1,
          result: { directive: { $directive: 'invoke', effect: 'echo.step', input: { i: 7 } } },
        },
        { effectId: 'eff_body_a' },
      ),
      ev(
        'runtime.effect.requested',
        {
          effectId: 'eff_do_a',
          threadId: thread,
          type: 'echo.step',
          input: { i: 7 },
          key: 'do:a',
          execution: 'local',
        },
        { effectId: 'eff_do_a' },
      ),
    ]
    await store.append(runId, events, { expectedSeq: 0 })
    const e = make([legacy], { store })
    const state = await e.wake(runId)
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ a: { i: 7 }, b: { from: 7 } })
    expect(bodyRuns['legacy.a']).toBeUndefined()
    expect(bodyRuns['legacy.b']).toBe(1)
  })
})

describe('the results a node body sees', () => {
  it('stay as they were when the body started, though nodes finish later in the same decide', async () => {
    // a and b finish in one decide; c (after a) starts between them in that decide's walk, so
    // its body gets the results with a only, frozen, and b's finish must not show up in them.
    const seen: Array<{ keys: string[]; frozen: boolean; ref: Record<string, unknown> }> = []
    const wf = defineWorkflow({
      name: 'results-view',
      nodes: {
        a: { run: () => 'A' },
        c: {
          after: ['a'],
          run: (ctx) => {
            seen.push({
              keys: Object.keys(ctx.results),
              frozen: Object.isFrozen(ctx.results),
              ref: ctx.results,
            })
            return 'C'
          },
        },
        b: { run: () => 'B' },
        d: { after: ['b', 'c'], run: (ctx) => Object.keys(ctx.results).sort().join('') },
      },
    })
    const e = make([wf])
    const { state } = await e.start(wf)
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ a: 'A', b: 'B', c: 'C', d: 'abc' })
    expect(seen.length).toBeGreaterThan(0)
    for (const s of seen) {
      expect(s.frozen).toBe(true)
      expect(Object.keys(s.ref)).toEqual(s.keys)
    }
    expect(seen[0].keys).toEqual(['a'])
  })
})
