import { createEngine, defineEffect, defineModule, type Engine, RuntimeEvents } from 'skein'
import { faultyStore } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('flow-permit-failed-commit')
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.stop()))
})

const startsAttempt = (args: readonly unknown[]) =>
  JSON.stringify(args).includes(RuntimeEvents.effectAttemptStarted)

describe.each(kinds)('an effect slot and a failed commit ($name)', (kind) => {
  it('a permit whose attempt start was never written goes back at once', async () => {
    let ran = 0
    const call = defineEffect({
      concurrency: { limit: 1 },
      execute: () => {
        ran++
        return ran
      },
    })
    const api = defineModule({ namespace: 'api', effects: { call } })
    const flow = defineWorkflow({
      name: 'limited',
      nodes: { call: { run: (ctx) => ctx.invoke(call, {}) } },
    })
    const store = faultyStore(kind.fresh().open())
    // The first commit that records an attempt start fails before it is written.
    let failed = 0
    store.failWhen((call) => {
      if (call.method !== 'append' || failed > 0 || !startsAttempt(call.args)) return undefined
      failed++
      return 'before'
    })
    const engine = createEngine({ store, modules: [workflow({ definitions: [flow] }), api] })
    engines.push(engine)
    await expect(engine.start(flow, undefined, { wait: 'settled' })).rejects.toThrow()
    expect(failed).toBe(1)
    // The slot the failed commit's attempt held is free: the next run takes it at once
    // (a leaked permit is renewed while this process lives, and this run would wait for it).
    const next = await Promise.race([
      engine.start(flow, undefined, { wait: 'settled' }),
      new Promise<'stuck'>((resolve) => setTimeout(() => resolve('stuck'), 5_000)),
    ])
    expect(next === 'stuck' ? next : next.state.status).toBe('completed')
    expect(ran).toBe(1)
  })
})
