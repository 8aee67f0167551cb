import {
  commands,
  createEngine,
  defineEffect,
  defineKind,
  defineModule,
  type Engine,
  TerminalError,
} from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import * as fixturesModule from '../support/fixtures.js'

let engine: Engine
afterEach(() => engine?.stop())

const flow = (name: string, effect: string, input: unknown = null, extra: object = {}) =>
  defineWorkflow({ name, nodes: { a: { run: (ctx) => ctx.invoke(effect, input), ...extra } } })

describe('in-process effects', () => {
  it('a handler may destructure emit, publish and effectType from its context', async () => {
    const seen: string[] = []
    const echo = defineEffect({ execute: async (input: unknown) => input })
    const mod = defineModule({
      namespace: 'destructured',
      effects: {
        echo,
        work: defineEffect<null, string | undefined>({
          execute: async (_input, { emit, publish, effectType, effectId }) => {
            publish('destructured.progress', { effectId })
            emit('app.noted', { by: 'destructured' })
            return effectType(echo)
          },
        }),
      },
    })
    const wf = flow('destructured', 'destructured.work')
    engine = createEngine({
      modules: [workflow({ definitions: [wf] }), fixturesModule.testEffects, mod],
      clock: manualClock(),
    })
    const started = engine.start(wf, undefined, { runId: 'd1' })
    engine.subscribeTransient('d1', (event) => seen.push(event.type))
    const { state } = await started
    expect(state.output).toEqual({ a: 'destructured.echo' })
    expect(seen).toEqual(['destructured.progress'])
    const events = await engine.getEvents('d1')
    expect(events.find((e) => e.type === 'app.noted')?.payload).toEqual({ by: 'destructured' })
  })

  it('an effect result over maxEventBytes fails the attempt with INVALID_RESULT; nothing oversized is written', async () => {
    const big = defineModule({
      namespace: 'big',
      effects: { make: defineEffect({ execute: async () => 'x'.repeat(2048) }) },
    })
    const wf = flow('oversized', 'big.make')
    engine = createEngine({
      modules: [workflow({ definitions: [wf] }), big],
      clock: manualClock(),
      limits: { maxEventBytes: 1024 },
    })
    const { runId, state } = await engine.start(wf)
    expect(state.status).toBe('failed')
    const events = await engine.getEvents(runId)
    const failed = events.find((e) => e.type === 'runtime.effect.failed')
    expect(failed?.payload).toMatchObject({
      attempt: 1,
      final: true,
      error: { code: 'INVALID_RESULT', message: expect.stringMatching(/over the limit of 1024/) },
    })
    for (const event of events) expect(JSON.stringify(event.payload).length).toBeLessThan(1024)
  })

  it('errors from handlers and kinds are recorded as JSON within the limits, never refused', async () => {
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic.self = cyclic
    const bad = defineModule({
      namespace: 'bad',
      effects: {
        cyclic: defineEffect({
          execute: async () => {
            throw new TerminalError('details that cannot be stored', cyclic as never)
          },
        }),
        long: defineEffect({
          retry: { maxAttempts: 1 },
          execute: async () => {
            throw new Error('y'.repeat(100_000))
          },
        }),
      },
      kinds: {
        failing: defineKind<null>({
          initialState: () => null,
          decide: () => [commands.fail({ code: 'KIND', message: 'no', details: cyclic as never })],
        }),
      },
      definitions: [{ kind: 'failing', name: 'failing', version: 'v1' }],
    })
    const cyclicFlow = flow('cyclic-error', 'bad.cyclic')
    const longFlow = flow('long-error', 'bad.long')
    engine = createEngine({
      modules: [workflow({ definitions: [cyclicFlow, longFlow] }), bad],
      clock: manualClock(),
    })
    const failedOf = async (runId: string) =>
      (await engine.getEvents(runId)).find((e) => e.type === 'runtime.effect.failed')
        ?.payload as any

    const cyclicRun = await engine.start(cyclicFlow)
    expect(cyclicRun.state.status).toBe('failed')
    expect((await failedOf(cyclicRun.runId)).error).toEqual({
      code: 'TERMINAL',
      message: 'details that cannot be stored',
      details: { dropped: 'details are not JSON: cyclic value at $.self' },
    })

    const longRun = await engine.start(longFlow)
    expect(longRun.state.status).toBe('failed')
    const message: string = (await failedOf(longRun.runId)).error.message
    expect(message.length).toBeLessThan(4200)
    expect(message).toMatch(/^y{4096}… \(95904 more characters\)$/)

    const kindRun = await engine.start({ kind: 'failing', name: 'failing', version: 'v1' })
    expect(kindRun.state.status).toBe('failed')
    expect(kindRun.state.error).toMatchObject({
      code: 'KIND',
      details: { dropped: expect.any(String) },
    })
  })

  it('invalid effect input fails the effect terminally with INVALID_INPUT', async () => {
    const wf = flow('typed', 'test.typed', { amount: -5 })
    engine = createEngineWith(wf)
    const { runId, state } = await engine.start(wf)
    expect(state.status).toBe('failed')
    const failed = (await engine.getEvents(runId)).find((e) => e.type === 'runtime.effect.failed')!
    expect((failed.payload as any).error.code).toBe('INVALID_INPUT')
  })
})

function createEngineWith(wf: any, extra: object = {}): Engine {
  const { testEffects } = fixturesModule
  return createEngine({
    modules: [workflow({ definitions: [wf] }), testEffects],
    clock: manualClock(),
    ...extra,
  })
}
