// engine.fork: a run failed at one node is forked at that node after the fix: only that node
// and what depends on it run again (effect calls counted), the effects before the cut keep
// their recorded results, the fork's effect ids are its own, and the source run's log is
// byte-for-byte what it was. Bad input is refused with nothing written. Memory, SQLite, Postgres.
import {
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type EventEnvelope,
  SkeinError,
} from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('fork')
const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})

const calls = { fetch: 0, note: 0, charge: 0, ship: 0 }
let broken = true
let holding: Array<() => void> = []
const count = (name: keyof typeof calls, result: unknown) =>
  defineEffect<unknown, unknown>({
    retry: { maxAttempts: 1 },
    execute: async () => {
      calls[name]++
      if (name === 'charge' && broken) throw new Error('the charge code has a bug')
      return result
    },
  })
const shop = defineModule({
  namespace: 'shop',
  effects: {
    fetch: count('fetch', { cents: 1200 }),
    note: count('note', 'noted'),
    charge: count('charge', { chargeId: 'ch_1' }),
    ship: count('ship', 'shipped'),
    hold: defineEffect<unknown, string>({
      execute: () => new Promise<string>((resolve) => holding.push(() => resolve('held'))),
    }),
  },
})
const order = defineWorkflow({
  name: 'order',
  input: z.object({ id: z.string() }),
  nodes: {
    fetch: { run: (ctx) => ctx.invoke('shop.fetch') },
    note: { run: (ctx) => ctx.invoke('shop.note') },
    charge: { after: ['fetch', 'note'], run: (ctx) => ctx.invoke('shop.charge') },
    ship: { after: ['charge'], run: (ctx) => ctx.invoke('shop.ship') },
  },
})
const held = defineWorkflow({
  name: 'held',
  nodes: {
    slow: { run: (ctx) => ctx.invoke('shop.hold') },
    go: { run: (ctx) => ctx.waitFor('app.go') },
  },
})
const modules = () => [shop, workflow({ definitions: [order, held] })]
/** An event's payload, read as the runtime's catalog describes it. */
const p = (event: EventEnvelope) => event.payload as Record<string, any>
const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: unknown) => (SkeinError.is(error) ? error.code : String(error)),
  )

describe.each(kinds)('fork on $name', (kind) => {
  it('re-runs only the failed node and its dependents; the source log is unchanged', {
    timeout: 60_000,
  }, async () => {
    broken = true
    for (const name of Object.keys(calls) as Array<keyof typeof calls>) calls[name] = 0
    const engine = createEngine({ store: kind.fresh().open(), modules: modules() })
    engines.push(engine)
    const { runId } = await engine.start(order, { id: 'o-1' })
    await expect(engine.result(runId)).rejects.toMatchObject({ code: 'RUN_FAILED' })
    expect(calls).toEqual({ fetch: 1, note: 1, charge: 1, ship: 0 })
    const before = JSON.stringify(await engine.getEvents(runId))

    broken = false // the fix is deployed
    const forked = await engine.fork(runId, { atNode: 'charge' })
    expect(await engine.result(forked.runId)).toMatchObject({
      fetch: { cents: 1200 },
      note: 'noted',
      charge: { chargeId: 'ch_1' },
      ship: 'shipped',
    })
    expect(calls).toEqual({ fetch: 1, note: 1, charge: 2, ship: 1 })
    expect(JSON.stringify(await engine.getEvents(runId))).toBe(before)
    expect((await engine.getRun(runId)).status).toBe('failed')

    const source = await engine.getEvents(runId)
    const copy = await engine.getEvents(forked.runId)
    const { atSeq } = forked.forkedFrom
    expect(forked.forkedFrom.runId).toBe(runId)
    const first = source.find(
      (e) => e.type === 'runtime.effect.requested' && p(e).key === 'do:charge',
    )
    expect(atSeq).toBeLessThanOrEqual(first!.seq)
    // The prefix is the source's, under the fork's run id; the start names the source.
    expect(copy.slice(1, atSeq - 1).map((e) => [e.seq, e.type, e.payload])).toEqual(
      source.slice(1, atSeq - 1).map((e) => [e.seq, e.type, e.payload]),
    )
    expect(copy[0].payload).toMatchObject({ forkedFrom: { runId, atSeq } })
    expect(copy.every((e) => e.runId === forked.runId)).toBe(true)
    const sourceIds = new Set(source.map((e) => e.id))
    expect(copy.some((e) => sourceIds.has(e.id))).toBe(false)
    const chargeIds = (events: typeof source) =>
      events
        .filter((e) => e.type === 'runtime.effect.requested' && p(e).key === 'do:charge')
        .map((e) => p(e).effectId)
    expect(chargeIds(copy)).toHaveLength(1)
    expect(chargeIds(source)).not.toContain(chargeIds(copy)[0])

    // The same cut by seq: the node's first event is a cut point.
    const bySeq = await engine.fork(runId, { atSeq, input: { id: 'o-2' } })
    expect(bySeq.forkedFrom).toEqual({ runId, atSeq })
    await engine.result(bySeq.runId)
    expect((await engine.getEvents(bySeq.runId))[0].payload).toMatchObject({ input: { id: 'o-2' } })
    expect(calls).toEqual({ fetch: 1, note: 1, charge: 3, ship: 2 })
    expect(JSON.stringify(await engine.getEvents(runId))).toBe(before)
  })

  it('refuses bad input with nothing written', async () => {
    broken = true
    const engine = createEngine({ store: kind.fresh().open(), modules: modules() })
    engines.push(engine)
    const { runId } = await engine.start(order, { id: 'o-1' })
    await engine.result(runId).catch(() => undefined)
    const tail = (await engine.getEvents(runId)).length
    const runs = async () => (await engine.listRuns()).sort()
    const before = await runs()
    const refused = [
      [engine.fork('ghost', { atNode: 'charge' }), 'RUN_NOT_FOUND'],
      [engine.fork(runId, { atNode: 'nope' }), 'INVALID_REQUEST'],
      [engine.fork(runId, { atSeq: 0 }), 'INVALID_REQUEST'],
      [engine.fork(runId, { atSeq: tail + 1 }), 'INVALID_REQUEST'],
      // Seq 2 was written in one batch with the start (seq 1).
      [engine.fork(runId, { atSeq: 2 }), 'INVALID_REQUEST'],
      [engine.fork(runId, { atSeq: 3, atNode: 'charge' }), 'INVALID_REQUEST'],
      [engine.fork(runId, {}), 'INVALID_REQUEST'],
      [engine.fork(runId, { atNode: 'charge', input: { id: 7 } }), 'INVALID_INPUT'],
      [engine.fork(runId, { atNode: 'charge', runId }), 'START_CONFLICT'],
      [engine.fork(runId, { atNode: 'charge', nope: 1 } as never), 'INVALID_REQUEST'],
    ] as const
    for (const [call, code] of refused) expect(await codeOf(call)).toBe(code)
    expect(await runs()).toEqual(before)
  })

  it('never copies an effect still open at the cut', async () => {
    holding = []
    const clock = manualClock()
    const engine = createEngine({ store: kind.fresh().open(), modules: modules(), clock })
    engines.push(engine)
    const { runId } = await engine.start(held)
    await clock.advance(1000)
    await engine.signal(runId, [{ type: 'app.go' }])
    const events = await engine.getEvents(runId)
    const signal = events.find((e) => e.type === 'app.go')!
    const requested = events.find((e) => e.type === 'runtime.effect.requested')!
    // By seq: refused, naming the effect still in flight.
    const error = await engine.fork(runId, { atSeq: signal.seq }).catch((e) => e)
    expect(error.code).toBe('INVALID_REQUEST')
    expect(error.message).toContain(p(requested).effectId)
    // By node: the cut moves before the open effect's request, which runs anew in the fork.
    const forked = await engine.fork(runId, { atNode: 'go' })
    expect(forked.forkedFrom.atSeq).toBe(requested.seq)
    const copy = await engine.getEvents(forked.runId)
    const reissued = copy.filter((e) => e.type === 'runtime.effect.requested')
    expect(reissued).toHaveLength(1)
    expect(p(reissued[0]).effectId).not.toBe(p(requested).effectId)
    for (const release of holding) release()
  })
})
