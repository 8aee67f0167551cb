import { createEngine, defineEffect, defineModule, type Engine } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'

// `inspectRun` (`GET /runs/:id/status`) of an effect that failed for good after retries: no
// deadline (the retry time it kept already passed; nothing is due), and no deadline listed.

let engine: Engine
afterEach(() => engine?.stop())

const flaky = defineModule({
  namespace: 'down',
  effects: {
    call: defineEffect({
      retry: { maxAttempts: 3, backoffMs: 5 },
      execute: async () => {
        throw new Error('provider outage')
      },
    }),
  },
})

const calls = defineWorkflow({
  name: 'calls',
  nodes: { call: { run: (ctx) => ctx.invoke('down.call', {}) } },
})

describe('a finally failed effect in the run status', () => {
  it('has no deadline and no due retry, and keeps its last error', async () => {
    engine = createEngine({ modules: [workflow({ definitions: [calls] }), flaky] })
    const { runId } = await engine.start(calls, undefined)
    await expect(engine.result(runId, { timeoutMs: 10_000 })).rejects.toThrow(/provider outage/)
    const status = await engine.inspectRun(runId)
    expect(status.status).toBe('failed')
    const [effect] = status.effects
    expect(effect.status).toBe('failed')
    expect(effect.attempt).toBe(3)
    expect(effect.deadlineAt).toBeNull()
    expect(effect.lastError?.message).toBe('provider outage')
    expect(status.deadlines.filter((d) => d.kind === 'retry')).toEqual([])
  })
})
