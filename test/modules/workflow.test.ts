import { defineEffect, defineModule, TerminalError } from 'skein'
import { approval, decision, pendingApprovals } from 'skein/approval'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'

const newEngine = enginesStoppedAfterEach()

const calls: string[] = []
let flaky = 0
const docs = defineModule({
  namespace: 'docs',
  effects: {
    publish: defineEffect<{ text: string }, { url: string }>({
      retry: { maxAttempts: 3, backoffMs: 100 },
      execute: async (input) => {
        calls.push(input.text)
        return { url: `https://docs/${input.text.length}` }
      },
    }),
    flaky: defineEffect<null, { ok: true }>({
      retry: { maxAttempts: 3, backoffMs: 100 },
      execute: async () => {
        flaky++
        if (flaky < 3) throw new Error(`flaky ${flaky}`)
        return { ok: true }
      },
    }),
    broken: defineEffect({
      execute: async () => {
        throw new TerminalError('card declined')
      },
    }),
  },
})

const release = defineWorkflow({
  name: 'release',
  nodes: {
    draft: { run: ({ input }) => ({ text: `About ${input.topic}` }) },
    review: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    publish: {
      after: ['review'],
      when: ({ results }) => results.review.outcome === 'approve',
      run: (ctx) => ctx.invoke('docs.publish', { text: ctx.results.draft.text }),
    },
  },
  output: ({ results }) => ({ published: results.publish !== undefined }),
})

const make = (definitions: any[], extra: any = {}) => {
  const clock = manualClock()
  const engine = newEngine({
    modules: [workflow({ definitions }), approval(), docs],
    clock,
    ...extra,
  })
  return { engine, clock }
}

describe('workflow module', () => {
  it('parks on a gate, then approval runs the effect and completes', async () => {
    const { engine } = make([release])
    const { runId, state } = await engine.start(release, { topic: 'Skein' })
    expect(state.status).toBe('running')
    const pending = await engine.project(runId, pendingApprovals)
    expect(pending.items).toHaveLength(1)
    expect(pending.items[0]).toMatchObject({ title: 'Publish?', status: 'pending' })
    const after = await engine.signal(runId, [decision(pending.items[0].approvalId, 'approve')])
    expect(after.status).toBe('completed')
    expect(after.output).toEqual({ published: true })
    expect((await engine.project(runId, 'pendingApprovals')).items[0].status).toBe('approved')
    const types = (await engine.getEvents(runId)).map((e) => e.type)
    expect(types.filter((t) => t === 'workflow.node.finished')).toHaveLength(3)
  })

  it('a rejection skips the publish node by `when`', async () => {
    const { engine } = make([release])
    const { runId } = await engine.start(release, { topic: 'x' })
    const [item] = (await engine.project(runId, pendingApprovals)).items
    const state = await engine.signal(runId, [decision(item.approvalId, 'reject')])
    expect(state.output).toEqual({ published: false })
    const skipped = (await engine.getEvents(runId)).filter(
      (e) => e.type === 'workflow.node.skipped',
    )
    expect(skipped.map((e) => (e.payload as any).nodeId)).toEqual(['publish'])
  })

  it('sleep parks on a timer that fires when the clock moves', async () => {
    const nap = defineWorkflow({
      name: 'nap',
      nodes: {
        wait: { run: (ctx) => ctx.sleep(60_000) },
        after: { after: ['wait'], run: () => 'awake' },
      },
    })
    const { engine, clock } = make([nap])
    const { runId, state } = await engine.start(nap)
    expect(state.status).toBe('running')
    expect(state.threads[state.rootThreadId].status).toBe('waiting')
    await clock.advance(59_999)
    expect((await engine.getRun(runId)).status).toBe('running')
    await clock.advance(1)
    const done = await engine.getRun(runId)
    expect(done.status).toBe('completed')
    expect((done.output as any).after).toBe('awake')
  })

  it('retries a failing effect with backoff under the manual clock', async () => {
    flaky = 0
    const wf = defineWorkflow({
      name: 'flaky',
      nodes: { a: { run: (ctx) => ctx.invoke('docs.flaky') } },
    })
    const { engine, clock } = make([wf])
    const { runId, state } = await engine.start(wf)
    expect(state.status).toBe('running')
    const settle = async () => (await engine.runtime).idle()
    await clock.advance(100)
    await settle()
    await clock.advance(200)
    await settle()
    const done = await engine.getRun(runId)
    expect(done.status).toBe('completed')
    const events = await engine.getEvents(runId)
    const retries = events.filter((e) => e.type === 'runtime.effect.retry.scheduled')
    expect(retries.map((e) => (e.payload as any).nextAttemptAt - e.ts)).toEqual([100, 200])
  })

  it('a terminal error fails the node and the run; onFailure skip and fallback recover', async () => {
    const failing = defineWorkflow({
      name: 'failing',
      nodes: { a: { run: (ctx) => ctx.invoke('docs.broken') } },
    })
    const skipping = defineWorkflow({
      name: 'skipping',
      nodes: {
        a: { run: (ctx) => ctx.invoke('docs.broken'), onFailure: 'skip' },
        b: { after: ['a'], run: () => 'b ran' },
      },
    })
    const falling = defineWorkflow({
      name: 'falling',
      nodes: {
        a: { run: (ctx) => ctx.invoke('docs.broken'), onFailure: { fallback: 'plan_b' } },
        plan_b: { run: () => 'fallback result' },
        c: { after: ['a'], run: ({ results }) => `c saw ${results.a}` },
      },
    })
    const { engine } = make([failing, skipping, falling])
    const failed = await engine.start(failing)
    expect(failed.state.status).toBe('failed')
    expect(failed.state.error?.code).toBe('NODE_FAILED')
    expect(failed.state.error?.message).toContain('card declined')
    const skipped = await engine.start(skipping)
    expect(skipped.state.status).toBe('completed')
    expect((skipped.state.output as any).b).toBe('b ran')
    const fell = await engine.start(falling)
    expect(fell.state.status).toBe('completed')
    expect((fell.state.output as any).c).toBe('c saw fallback result')
  })

  it('spawns a child workflow and uses its output', async () => {
    const child = defineWorkflow({
      name: 'child',
      nodes: { x: { run: ({ input }) => input.n * 10 } },
    })
    const parent = defineWorkflow({
      name: 'parent',
      nodes: { c: { run: (ctx) => ctx.spawn(child, { n: 4 }) } },
      output: ({ results }) => results.c.x,
    })
    const { engine } = make([child, parent])
    const { state } = await engine.start(parent)
    expect(state.status).toBe('completed')
    expect(state.output).toBe(40)
    expect(Object.keys(state.threads)).toHaveLength(2)
  })

  it('waitFor resumes on a matching signal and times out otherwise', async () => {
    const wf = defineWorkflow({
      name: 'waiter',
      nodes: {
        w: {
          run: (ctx) => ctx.waitFor('shop.paid', { match: { orderId: 'o1' }, timeoutMs: 5000 }),
        },
      },
    })
    const { engine, clock } = make([wf])
    const a = await engine.start(wf)
    await engine.signal(a.runId, [{ type: 'shop.paid', payload: { orderId: 'o2' } }])
    expect((await engine.getRun(a.runId)).status).toBe('running')
    const paid = await engine.signal(a.runId, [
      { type: 'shop.paid', payload: { orderId: 'o1', amount: 5 } },
    ])
    expect(paid.status).toBe('completed')
    expect((paid.output as any).w).toEqual({ orderId: 'o1', amount: 5 })
    const b = await engine.start(wf)
    await clock.advance(5000)
    const timedOut = await engine.getRun(b.runId)
    expect(timedOut.status).toBe('failed')
    expect(timedOut.error?.message).toContain('timed out')
  })

  it('rejects bad graphs at definition time', () => {
    expect(() =>
      // @ts-expect-error an unknown dependency is a type error too; JavaScript callers get here
      defineWorkflow({ name: 'x', nodes: { a: { after: ['zz'], run: () => 1 } } }),
    ).toThrow(/unknown node "zz"/)
    expect(() =>
      defineWorkflow({
        name: 'x',
        nodes: { a: { after: ['b'], run: () => 1 }, b: { after: ['a'], run: () => 1 } },
      }),
    ).toThrow(/cycle/)
    expect(() =>
      defineWorkflow({ name: 'x', nodes: { a: { run: () => 1 } }, concurrency: 0 }),
    ).toThrow(/concurrency/)
  })
})
