// Bulk actions by filter: runs failed by a simulated provider outage are retried by filter once
// it is over, and a second bulk retry at the same time retries nothing twice (effect calls are
// counted); a dry run counts and writes nothing; an empty filter is refused; wake and cancel.
import { createEngine, defineEffect, defineModule, type Engine, type SkeinError } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('bulk')
const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})

let outage = true
let calls = 0
const provider = defineModule({
  namespace: 'provider',
  effects: {
    charge: defineEffect<unknown, string>({
      retry: { maxAttempts: 1 },
      execute: async () => {
        calls++
        if (outage) throw new Error('the provider is down')
        return 'charged'
      },
    }),
  },
})
const order = defineWorkflow({
  name: 'order',
  nodes: { charge: { run: (ctx) => ctx.invoke('provider.charge') } },
})
const parked = defineWorkflow({
  name: 'parked',
  nodes: { go: { run: (ctx) => ctx.waitFor('app.go') } },
})
const modules = () => [provider, workflow({ definitions: [order, parked] })]

describe.each(kinds)('bulk actions on $name', (kind) => {
  it('retries every run the outage failed, once, with a concurrent second retry', {
    timeout: 120_000,
  }, async () => {
    outage = true
    calls = 0
    const engine = createEngine({ store: kind.fresh().open(), modules: modules() })
    engines.push(engine)
    const RUNS = 40
    const runIds: string[] = []
    for (let i = 0; i < RUNS; i++) runIds.push((await engine.start(order)).runId)
    await Promise.all(runIds.map((runId) => engine.result(runId).catch(() => undefined)))
    await engine.start(parked)
    expect(calls).toBe(RUNS)

    const dry = await engine.retryMany(
      { status: 'failed', definitionName: 'order' },
      { dryRun: true },
    )
    expect(dry).toMatchObject({
      dryRun: true,
      matched: RUNS,
      truncated: false,
      done: [],
      refused: [],
    })
    expect(calls).toBe(RUNS)
    const refused = (await engine.retryMany({}).catch((e) => e)) as SkeinError
    expect(refused.code).toBe('INVALID_REQUEST')
    expect(refused.message).toContain('empty filter')

    outage = false
    const filter = { status: 'failed' as const, definitionName: 'order' }
    const [first, second] = await Promise.all([
      engine.retryMany(filter, { batchSize: 7 }),
      engine.retryMany(filter, { batchSize: 5 }),
    ])
    await Promise.all(runIds.map((runId) => engine.result(runId)))
    // Every failed effect ran exactly once more: no run was retried by both.
    expect(calls).toBe(2 * RUNS)
    const retried = [...first.done, ...second.done].map((item) => item.runId)
    expect(new Set(retried).size).toBe(retried.length)
    expect(first.matched + second.matched).toBeGreaterThanOrEqual(RUNS)
    expect(first.done.length + second.done.length).toBe(RUNS)
    for (const item of [...first.refused, ...second.refused]) {
      expect(['EFFECT_NOT_RETRYABLE', 'NOTHING_TO_RETRY']).toContain(item.code)
    }
    const page = await engine.listRunSummaries({ definitionName: 'order', status: 'failed' })
    expect(page.runs).toEqual([])
  })

  it('wakes and cancels by filter, and refuses bad options before acting', async () => {
    const engine = createEngine({ store: kind.fresh().open(), modules: modules() })
    engines.push(engine)
    const a = await engine.start(parked)
    const b = await engine.start(parked)
    const woken = await engine.wakeMany({ definitionName: 'parked' })
    expect(woken.done.map((item) => item.runId).sort()).toEqual([a.runId, b.runId].sort())
    const some = await engine.cancelMany({ runIdPrefix: a.runId })
    expect(some.done).toEqual([{ runId: a.runId }])
    expect((await engine.getRun(a.runId)).status).toBe('cancelled')
    expect((await engine.getRun(b.runId)).status).toBe('running')
    const capped = await engine.cancelMany({ status: 'running' }, { dryRun: true, maxRuns: 1 })
    expect(capped).toMatchObject({ matched: 1, truncated: false })
    for (const [filter, options] of [
      [{ status: 'bogus' }, {}],
      [{ colour: 'red' }, {}],
      [{ status: 'running' }, { maxRuns: 0 }],
      [{ status: 'running' }, { batchSize: 1000 }],
    ] as const) {
      const error = (await engine
        .cancelMany(filter as never, options)
        .catch((e) => e)) as SkeinError
      expect(error.code).toBe('INVALID_REQUEST')
    }
    expect((await engine.getRun(b.runId)).status).toBe('running')
  })
})
