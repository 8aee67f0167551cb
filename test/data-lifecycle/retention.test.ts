import { defineEffect, defineInput, defineModule, defineProjector, RUN_DELETED } from 'skein'
import { createEngineClient } from 'skein/client'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { storeKinds } from '../support/store-kinds.js'
import { untilSwept } from '../support/swept.js'

// Retention (docs/data-lifecycle.md): finished runs older than the limit are deleted by a
// sweep under the claim sweep:retention, in bounded batches; running and recent runs stay.

const kinds = storeKinds('retention')
const newEngine = enginesStoppedAfterEach()

const fx = defineModule({
  namespace: 'rt',
  events: { go: defineInput(z.object({})) },
  effects: { step: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n }) },
})
const quick = defineWorkflow({
  name: 'quick',
  nodes: { a: { run: (ctx) => ctx.invoke('rt.step', { n: 1 }) } },
})
const parked = defineWorkflow({
  name: 'parked',
  nodes: { w: { run: (ctx) => ctx.waitFor('rt.go') } },
})
const modules = [fx, workflow({ definitions: [quick, parked] })]

const until = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 500; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('never happened')
}

describe.each(kinds)('retention on $name', (kind) => {
  it('deletes finished runs past the limit in batches; running and recent runs stay', async () => {
    const clock = manualClock()
    const store = kind.fresh().open()
    const told: Array<{ runId: string; payload: unknown }> = []
    const watcher = defineProjector({
      name: 'deletions',
      handle({ runId, events }) {
        for (const e of events) if (e.type === RUN_DELETED) told.push({ runId, payload: e.payload })
      },
    })
    const batches: number[] = []
    const engine = newEngine({
      store,
      modules,
      clock,
      projectors: [watcher],
      observer: (o) => {
        if (o.type === 'retention.batch' && (o.deleted as number) > 0)
          batches.push(o.deleted as number)
      },
      authorize: () => true,
      retention: { finishedAfterMs: 60_000, batchSize: 3, intervalMs: 1000 },
    })
    const old: string[] = []
    for (let i = 0; i < 7; i++) {
      old.push((await engine.start(quick, undefined, { runId: `old-${i}`, wait: 'settled' })).runId)
    }
    const failed = await engine.start(parked, undefined, { runId: 'old-cancelled' })
    await engine.cancel(failed.runId)
    const running = await engine.start(parked, undefined, { runId: 'old-running' })
    await clock.advance(61_000)
    const recent = await engine.start(quick, undefined, { runId: 'recent', wait: 'settled' })

    await clock.advance(1000)
    await untilSwept(engine, clock, 8)
    const status = await engine.retention()
    expect(status).toMatchObject({
      enabled: true,
      finishedAfterMs: 60_000,
      batchSize: 3,
      holding: true,
      deletedTotal: 8,
    })
    expect(batches).toEqual([3, 3, 2])
    expect(status.lastSweep?.error).toBeUndefined()
    for (const runId of [...old, failed.runId]) {
      await expect(engine.getRun(runId)).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    }
    expect((await engine.getRun(running.runId)).status).toBe('running')
    expect((await engine.getRun(recent.runId)).status).toBe('completed')
    const listed = (await engine.listRunSummaries()).runs.map((r) => r.runId).sort()
    expect(listed).toEqual(['old-running', 'recent'])

    // Projectors were told each deletion, with its reason.
    await until(async () => {
      await clock.advance(100)
      return told.length === 8
    })
    expect(told.map((t) => t.runId).sort()).toEqual([...old, failed.runId].sort())
    expect(told[0].payload).toMatchObject({ reason: 'retention' })

    const client = createEngineClient({
      baseUrl: 'http://skein.test',
      fetch: async (request) => (await engine.fetch(request)) as Response,
    })
    const { retention } = await client.retention()
    expect(retention).toMatchObject({ enabled: true, deletedTotal: 8 })

    // Once the recent run is old enough, the next sweep takes it.
    await clock.advance(60_000)
    await untilSwept(engine, clock, 9)
    expect((await engine.getRun(running.runId)).status).toBe('running')
  })
})

describe('retention options', () => {
  it('refuses a bad limit, a status that is not finished and an unknown option, before anything runs', () => {
    const bad = [
      { finishedAfterMs: 0 },
      { finishedAfterMs: -5 },
      { finishedAfterMs: 1.5 },
      { finishedAfterMs: '1000' },
      {},
      { finishedAfterMs: 1000, statuses: ['running'] },
      { finishedAfterMs: 1000, statuses: [] },
      { finishedAfterMs: 1000, batchSize: 0 },
      { finishedAfterMs: 1000, batchSize: 20_000 },
      { finishedAfterMs: 1000, every: 5 },
    ]
    for (const retention of bad) {
      expect(
        () => newEngine({ modules, retention: retention as never }),
        JSON.stringify(retention),
      ).toThrow(/retention/)
    }
  })

  it('an engine without retention says so', async () => {
    const engine = newEngine({ modules })
    expect(await engine.retention()).toEqual({ enabled: false })
  })
})
