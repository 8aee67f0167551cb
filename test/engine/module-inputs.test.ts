import {
  createEngine,
  defineInput,
  defineModule,
  type Engine,
  type InputContext,
  payload,
} from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'

// The public module API for inputs: a catalog entry is internal unless declared
// with defineInput; inputs are validated by a schema that checks, then by `accept` against the
// run, before anything is written.

const seen: Array<Pick<InputContext, 'runId' | 'threadId' | 'identity' | 'waiting'>> = []

const shop = defineModule({
  namespace: 'shop',
  events: {
    paid: payload<{ orderId: string }>(),
    'refund.requested': defineInput(z.object({ orderId: z.string(), reason: z.string() })),
    'refund.approved': defineInput(z.object({ orderId: z.string() }), {
      accept: (approved, ctx) => {
        seen.push({
          runId: ctx.runId,
          threadId: ctx.threadId,
          identity: ctx.identity,
          waiting: ctx.waiting,
        })
        if (ctx.waiting.length === 0) ctx.refuse(`no refund of ${approved.orderId} is waiting`)
        return { ...approved, approvedBy: ctx.identity ?? null }
      },
    }),
  },
})

const refundFlow = defineWorkflow({
  name: 'refund',
  nodes: {
    wait: {
      run: (ctx) => ctx.waitFor('shop.refund.approved', { match: { orderId: 'o1' } }),
    },
  },
  output: ({ results }) => results.wait,
})

let engine: Engine
afterEach(() => engine?.stop())

const make = () => {
  engine = createEngine({
    modules: [workflow({ definitions: [refundFlow] }), shop],
    clock: manualClock(),
  })
  return engine
}

describe('module inputs', () => {
  it('refuses internal events from outside, validates inputs, accepts application events', async () => {
    make()
    const { runId } = await engine.start(refundFlow)
    const tail = (await engine.getEvents(runId)).length
    const internal = await engine
      .signal(runId, [{ type: 'shop.paid', payload: { orderId: 'o1' } }])
      .catch((e) => e)
    expect(internal.code).toBe('INVALID_EVENT')
    expect(internal.message).toContain('internal to module "shop"')
    const malformed = await engine
      .signal(runId, [{ type: 'shop.refund.requested', payload: { orderId: 1 } }])
      .catch((e) => e)
    expect(malformed.code).toBe('INVALID_EVENT')
    expect((await engine.getEvents(runId)).length).toBe(tail)
    await engine.signal(runId, [
      { type: 'shop.refund.requested', payload: { orderId: 'o1', reason: 'broken' } },
      { type: 'app.note', payload: { any: 'thing' } },
    ])
    expect((await engine.getEvents(runId)).length).toBe(tail + 2)
  })

  it('accept sees the waits the event would satisfy and the caller, and decides what is recorded', async () => {
    make()
    seen.length = 0
    const { runId, state } = await engine.start(refundFlow)
    const refused = await engine
      .signal(runId, [{ type: 'shop.refund.approved', payload: { orderId: 'o2' } }])
      .catch((e) => e)
    expect(refused.code).toBe('INVALID_EVENT')
    expect(refused.message).toBe('no refund of o2 is waiting')
    const done = await engine.signal(
      runId,
      [{ type: 'shop.refund.approved', payload: { orderId: 'o1' }, threadId: state.rootThreadId }],
      { identity: 'clerk-7' },
    )
    expect(done.output).toEqual({ orderId: 'o1', approvedBy: 'clerk-7' })
    expect(seen[1]).toMatchObject({
      runId,
      threadId: state.rootThreadId,
      identity: 'clerk-7',
      waiting: [{ threadId: state.rootThreadId, waitId: expect.any(String) }],
    })
  })

  it('composition refuses inputs that only type their payload, and names outside the grammar', () => {
    const compose = (events: Record<string, unknown>) => () =>
      createEngine({ modules: [defineModule({ namespace: 'bad', events: events as never })] })
    expect(compose({ x: defineInput(payload<{ a: string }>()) })).toThrow(
      /needs a schema that validates/,
    )
    expect(compose({ 'has space': payload() })).toThrow(/catalog event bad.has space/)
    expect(compose({ 'a..b': payload() })).toThrow(/catalog event bad.a..b/)
    expect(compose({ x: { not: 'a schema' } })).toThrow(/must be a Standard Schema/)
  })
})
