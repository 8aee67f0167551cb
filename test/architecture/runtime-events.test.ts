import { describe, expect, expectTypeOf, it } from 'vitest'
import {
  asRuntimeEvent,
  type PayloadOf,
  RT,
  type RuntimeEventPayloads,
  type RuntimeEventType,
} from '../../src/core/runtime-events.js'
import { createEngine, defineEffect, defineModule, type Json } from '../../src/index.js'
import { defineWorkflow, workflow } from '../../src/modules/workflow/index.js'

describe('the runtime event catalog', () => {
  it('names every runtime type once, and RT names every catalog type (checked by tsc)', () => {
    expectTypeOf<(typeof RT)[keyof typeof RT]>().toEqualTypeOf<RuntimeEventType>()
    expectTypeOf<PayloadOf<'runtime.effect.failed'>>().toEqualTypeOf<
      RuntimeEventPayloads['runtime.effect.failed']
    >()
    expectTypeOf<PayloadOf<'app.thing'>>().toEqualTypeOf<Json>()
    expect(new Set(Object.values(RT)).size).toBe(Object.keys(RT).length)
    // Where events are built (Batch.add's signature), a payload of the wrong shape for its
    // type does not compile; other types take any JSON.
    const add = <T extends string>(_type: T, _payload: PayloadOf<T>) => {}
    // @ts-expect-error: runtime.timer.set needs timerId, waitId and at
    add(RT.timerSet, { timerId: 't' })
    add('app.anything', { any: ['json'] })
  })

  it('describes the fields a real run records', async () => {
    const flaky = defineEffect({
      retry: { maxAttempts: 2, backoffMs: 0 },
      execute: (_input: unknown, ctx) => {
        if (ctx.attempt === 1) throw new Error('first attempt fails')
        return { ok: true }
      },
    })
    const effects = defineModule({ namespace: 'cat', effects: { flaky } })
    const flow = defineWorkflow({
      name: 'catalog',
      nodes: { call: { run: (ctx) => ctx.invoke(flaky, {}) } },
    })
    const engine = createEngine({ modules: [workflow({ definitions: [flow] }), effects] })
    const { runId, state } = await engine.start(flow, undefined, { wait: 'settled' })
    expect(state.status).toBe('completed')
    const events = await engine.getEvents(runId)
    const typed = events.map(asRuntimeEvent).filter((e) => e !== undefined)
    // Module events are not runtime events.
    expect(events.filter((e) => e.type.startsWith('workflow.')).map(asRuntimeEvent)).toEqual([
      undefined,
      undefined,
    ])
    const failed = typed.find((e) => e.type === RT.effectFailed)
    const retry = typed.find((e) => e.type === RT.effectRetryScheduled)
    const requested = typed.find((e) => e.type === RT.effectRequested)
    if (failed?.type !== RT.effectFailed) throw new Error('no effect.failed')
    if (retry?.type !== RT.effectRetryScheduled) throw new Error('no retry.scheduled')
    if (requested?.type !== RT.effectRequested) throw new Error('no effect.requested')
    expect(failed.payload).toMatchObject({
      effectId: requested.payload.effectId,
      attempt: 1,
      final: false,
      error: { message: 'first attempt fails' },
    })
    expect(retry.payload).toMatchObject({ attempt: 2, reason: 'backoff' })
    expect(requested.payload).toMatchObject({ type: 'cat.flaky', execution: 'local' })
    const completed = typed.find((e) => e.type === RT.runCompleted)
    expect(completed?.payload).toEqual({ output: { call: { ok: true } } })
    await engine.stop()
  })
})
