// A directive made in a node body but not returned as the body's value (dropped, awaited, a
// second one, or inside an array or object) fails the node with DIRECTIVE_MISUSE, naming the
// workflow and the node and saying what to write instead.
import { defineEffect, defineModule } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'

const newEngine = enginesStoppedAfterEach()

const calls: string[] = []
const svc = defineModule({
  namespace: 'svc',
  effects: {
    call: defineEffect<unknown, string>({
      execute: async (input) => {
        calls.push(JSON.stringify(input))
        return 'called'
      },
    }),
  },
})
const child = defineWorkflow({ name: 'child', nodes: { only: { run: () => 'child done' } } })

let bodyRuns = 0
const flows = {
  dropped: defineWorkflow({
    name: 'dropped',
    nodes: {
      wait: {
        run: (ctx) => {
          ctx.sleep(10_000)
        },
      },
      after: { after: ['wait'], run: () => 'too early' },
    },
  }),
  awaited: defineWorkflow({
    name: 'awaited',
    nodes: {
      step: {
        run: async (ctx) => {
          await ctx.sleep(10_000)
          return ctx.invoke('svc.call', { n: 1 })
        },
      },
    },
  }),
  array: defineWorkflow({
    name: 'array',
    nodes: { fan: { run: (ctx) => [ctx.spawn(child), ctx.spawn(child)] } },
  }),
  nested: defineWorkflow({
    name: 'nested',
    version: 'v3',
    nodes: { pack: { run: (ctx) => ({ later: ctx.sleep(5) }) } },
  }),
  retried: defineWorkflow({
    name: 'retried',
    nodes: {
      once: {
        retry: { maxAttempts: 3, backoffMs: 10 },
        run: (ctx) => {
          bodyRuns++
          ctx.invoke('svc.call', { n: 2 })
          return 'forgot to return it'
        },
      },
    },
  }),
  skipped: defineWorkflow({
    name: 'skipped',
    nodes: {
      maybe: {
        onFailure: 'skip',
        run: (ctx) => {
          ctx.waitFor('app.go')
        },
      },
      next: { after: ['maybe'], run: ({ results }) => ({ sawMaybe: 'maybe' in results }) },
    },
  }),
  correct: defineWorkflow({
    name: 'correct',
    nodes: {
      call: { run: async (ctx) => ctx.invoke('svc.call', { n: 3 }) },
      nap: { after: ['call'], run: (ctx) => ctx.sleep(5) },
      plain: { after: ['nap'], run: ({ results }) => ({ call: results.call }) },
    },
  }),
}

function make() {
  const clock = manualClock()
  const engine = newEngine({
    modules: [workflow({ definitions: [child, ...Object.values(flows)] }), svc],
    clock,
  })
  return { engine, clock }
}

async function nodeError(name: keyof typeof flows) {
  const { engine } = make()
  const { runId, state } = await engine.start(flows[name])
  const events = await engine.getEvents(runId)
  const failed = events.find(
    (e) => e.type === 'workflow.node.failed' || e.type === 'workflow.node.skipped',
  )
  return { state, error: (failed?.payload as any)?.error, events }
}

describe('directive misuse in workflow nodes', () => {
  it('a directive that is made and dropped (no return) fails the node and says to return it', async () => {
    const { state, error, events } = await nodeError('dropped')
    expect(state.status).toBe('failed')
    expect(error.code).toBe('DIRECTIVE_MISUSE')
    expect(error.message).toBe(
      'workflow dropped@v1, node wait: ctx.sleep() made a directive that the node did not return; a directive only takes effect as the value the node returns: write `return ctx.sleep(…)`',
    )
    expect(state.error).toMatchObject({ code: 'NODE_FAILED', details: { nodeId: 'wait', error } })
    expect(events.some((e) => e.type === 'runtime.wait.registered')).toBe(false)
  })

  it('an awaited directive followed by another is refused: one node, one directive', async () => {
    calls.length = 0
    const { error } = await nodeError('awaited')
    expect(error.code).toBe('DIRECTIVE_MISUSE')
    expect(error.message).toBe(
      'workflow awaited@v1, node step: the node made 2 directives (ctx.sleep, ctx.invoke) but a node does one durable step; awaiting a directive does not wait for it. Return one directive per node and chain nodes with `after` (e.g. a node that returns ctx.sleep(…), then one after it that returns ctx.invoke(…))',
    )
    expect(calls).toEqual([])
  })

  it('directives returned in an array are refused, not completed as the output', async () => {
    const { state, error } = await nodeError('array')
    expect(state.status).toBe('failed')
    expect(state.output).toBeUndefined()
    expect(error.code).toBe('DIRECTIVE_MISUSE')
    expect(error.message).toMatch(/^workflow array@v1, node fan: the node made 2 directives/)
    expect(error.message).toMatch(/parallel work is separate nodes/)
  })

  it('a directive nested in the returned value is refused', async () => {
    const { error } = await nodeError('nested')
    expect(error.message).toBe(
      'workflow nested@v3, node pack: ctx.sleep() made a directive that the node returned inside its value; a directive only takes effect as the value the node returns itself: write `return ctx.sleep(…)`',
    )
  })

  it('misuse is not retried (the body would make the same mistake again)', async () => {
    bodyRuns = 0
    calls.length = 0
    const { error } = await nodeError('retried')
    expect(error.code).toBe('DIRECTIVE_MISUSE')
    expect(bodyRuns).toBe(1)
    expect(calls).toEqual([])
  })

  it("follows the node's onFailure: a skipped node records the error", async () => {
    const { state, error } = await nodeError('skipped')
    expect(error.code).toBe('DIRECTIVE_MISUSE')
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ next: { sawMaybe: false } })
  })

  it('a returned directive (async or not) still works', async () => {
    const { engine, clock } = make()
    const { runId } = await engine.start(flows.correct)
    await clock.advance(5)
    const done = await engine.getRun(runId)
    expect(done.status).toBe('completed')
    expect(done.output).toMatchObject({ call: 'called', plain: { call: 'called' } })
  })
})
