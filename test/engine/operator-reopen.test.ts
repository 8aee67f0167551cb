import {
  commands,
  createEngine,
  defineEffect,
  defineKind,
  defineModule,
  type Engine,
  type Outcome,
  TerminalError,
} from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'

// An operator retry (`retryEffect`) re-opens a finally failed command: kinds see it through
// `ctx.outcome(key).reopenedAt`, the seq of the retry that re-opened it.

let engine: Engine
afterEach(() => engine?.stop())

/** An effect that fails terminally while `failing.now` is true. */
function switchable() {
  const failing = { now: true, calls: 0 }
  const mod = defineModule({
    namespace: 'ops',
    effects: {
      charge: defineEffect({
        execute: () => {
          failing.calls++
          if (failing.now) throw new TerminalError('gateway down')
          return { charged: failing.calls }
        },
      }),
    },
  })
  return { failing, mod }
}

async function retryFailed(runId: string) {
  const effect = (await engine.inspectRun(runId)).effects.find((e) => e.status === 'failed')
  if (!effect) throw new Error('no failed effect to retry')
  return engine.retryEffect(runId, effect.effectId)
}

describe('an operator retry re-opens the command', () => {
  it('shows a custom kind the re-open in outcome(key).reopenedAt', async () => {
    const seen: Outcome[] = []
    const once = defineKind<null>({
      initialState: () => null,
      decide(_state, ctx) {
        const charged = ctx.outcome('charge')
        seen.push(charged)
        if (charged.status === 'none') return [commands.invoke('ops.charge', {}, { key: 'charge' })]
        if (charged.status === 'completed') return [commands.complete(charged.value)]
        if (charged.status === 'failed') return [commands.fail(charged.error)]
        return []
      },
    })
    const { failing, mod } = switchable()
    const kinds = defineModule({
      namespace: 'once',
      kinds: { once },
      definitions: [{ kind: 'once', name: 'charge-once', version: 'v1' }],
    })
    engine = createEngine({ modules: [mod, kinds], clock: manualClock() })
    const { runId, state } = await engine.startRun({ kind: 'once', definitionName: 'charge-once' })
    expect(state.status).toBe('failed')
    expect(seen.at(-1)).toMatchObject({ status: 'failed' })
    expect(seen.at(-1)).not.toHaveProperty('reopenedAt')

    failing.now = false
    const retried = await retryFailed(runId)
    expect(retried.status).toBe('completed')
    const retry = (await engine.getEvents(runId)).find(
      (e) => e.type === 'runtime.effect.retry.scheduled',
    )!
    // Pending again, then completed: both say which retry re-opened it.
    expect(seen.some((o) => o.status === 'pending' && o.reopenedAt === retry.seq)).toBe(true)
    expect(seen.at(-1)).toEqual({
      status: 'completed',
      value: { charged: 2 },
      reopenedAt: retry.seq,
    })
  })

  it('re-opens a failed node again after each retry, and fails it again when it fails again', async () => {
    const { failing, mod } = switchable()
    const flow = defineWorkflow({
      name: 'charge-flow',
      nodes: {
        charge: { run: (ctx) => ctx.invoke('ops.charge', {}) },
        after: { after: ['charge'], run: ({ results }) => ({ saw: results.charge }) },
      },
    })
    engine = createEngine({ modules: [workflow({ definitions: [flow] }), mod] })
    const { runId, state } = await engine.start(flow)
    expect(state.status).toBe('failed')

    const again = await retryFailed(runId)
    expect(again.status).toBe('failed')
    const nodeEvents = async () =>
      (await engine.getEvents(runId))
        .filter((e) => e.type.startsWith('workflow.node.'))
        .map((e) => e.type.slice('workflow.node.'.length))
    expect(await nodeEvents()).toEqual(['started', 'failed', 'failed'])

    failing.now = false
    const done = await retryFailed(runId)
    expect(done.status).toBe('completed')
    expect(done.output).toEqual({ charge: { charged: 3 }, after: { saw: { charged: 3 } } })
    expect(await nodeEvents()).toEqual([
      'started',
      'failed',
      'failed',
      'finished',
      'started',
      'finished',
    ])
  })

  it('re-opens the node of a parent workflow whose child workflow failed', async () => {
    const { failing, mod } = switchable()
    const child = defineWorkflow({
      name: 'child',
      nodes: { charge: { run: (ctx) => ctx.invoke('ops.charge', {}) } },
    })
    const parent = defineWorkflow({
      name: 'parent',
      nodes: {
        sub: { run: (ctx) => ctx.spawn(child) },
        after: { after: ['sub'], run: ({ results }) => ({ saw: results.sub }) },
      },
    })
    engine = createEngine({ modules: [workflow({ definitions: [child, parent] }), mod] })
    const { runId, state } = await engine.start(parent)
    expect(state.status).toBe('failed')

    failing.now = false
    const done = await retryFailed(runId)
    expect(done.status).toBe('completed')
    expect(done.output).toEqual({
      sub: { charge: { charged: 2 } },
      after: { saw: { charge: { charged: 2 } } },
    })
  })
})
