import { commands, createEngine, defineEffect, defineKind, defineModule, payload } from 'skein'
import { describe, expect, it } from 'vitest'

// An inline effect declared `ephemeral: true`: a successful attempt records nothing and its
// result is the thread's outcome for the key until the iteration ends; the kind records what it
// keeps. Anything else is recorded as a normal effect.

let pickRuns = 0
const effects = {
  pick: defineEffect<{ n: number }, { picked: number }>({
    execution: 'inline',
    ephemeral: true,
    execute: (input) => {
      pickRuns++
      return { picked: input.n * 10 }
    },
  }),
  noisy: defineEffect<null, string>({
    execution: 'inline',
    ephemeral: true,
    execute: (_input, ctx) => {
      ctx.emit('eph.note', { said: 'hi' })
      return 'done'
    },
  }),
  local: defineEffect<null, string>({ ephemeral: true, execute: async () => 'ran' }),
  huge: defineEffect<null, string>({
    execution: 'inline',
    ephemeral: true,
    execute: () => 'x'.repeat(4096),
  }),
}

/** Invokes `effect` ephemerally, then records its value in an event and completes with it. */
const recorder = defineKind<{ recorded?: unknown }>({
  initialState: () => ({}),
  step: (state, event) =>
    event.type === 'eph.recorded' ? { recorded: (event.payload as any).value } : state,
  decide: (state, ctx) => {
    if (state.recorded !== undefined) return [commands.complete(state.recorded)]
    const { effect, input } = ctx.input as { effect: string; input: unknown }
    const outcome = ctx.outcome('k')
    if (outcome.status === 'completed') {
      return [commands.emit('eph.recorded', { value: outcome.value })]
    }
    if (outcome.status === 'failed') return [commands.fail(outcome.error)]
    return [commands.invoke(effect, input, { key: 'k' })]
  },
})

const def = { kind: 'recorder', name: 'rec', version: 'v1' } as const
const eph = defineModule({
  namespace: 'eph',
  events: { recorded: payload<{ value: unknown }>(), note: payload<{ said: string }>() },
  effects,
  kinds: { recorder },
  definitions: [def],
})

describe('ephemeral invoke', () => {
  it('records only what the kind keeps of a successful inline attempt', async () => {
    const engine = createEngine({ modules: [eph] })
    pickRuns = 0
    const { runId, state } = await engine.start(def, { effect: 'eph.pick', input: { n: 4 } })
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ picked: 40 })
    const types = (await engine.getEvents(runId)).map((e) => e.type)
    expect(types).toEqual([
      'runtime.run.started',
      'runtime.thread.started',
      'eph.recorded',
      'runtime.thread.completed',
      'runtime.run.completed',
    ])
    expect(pickRuns).toBe(1)
    await engine.stop()
  })

  it('records the effect in full when the attempt emits events', async () => {
    const engine = createEngine({ modules: [eph] })
    const { runId, state } = await engine.start(def, { effect: 'eph.noisy', input: null })
    expect(state.status).toBe('completed')
    const types = (await engine.getEvents(runId)).map((e) => e.type)
    expect(types.slice(2, 6)).toEqual([
      'runtime.effect.requested',
      'eph.note',
      'runtime.effect.completed',
      'eph.recorded',
    ])
    await engine.stop()
  })

  it('ignores `ephemeral` for an effect that is not inline', async () => {
    const engine = createEngine({ modules: [eph] })
    const { runId, state } = await engine.start(def, { effect: 'eph.local', input: null })
    expect(state.status).toBe('completed')
    expect(state.output).toBe('ran')
    const types = (await engine.getEvents(runId)).map((e) => e.type)
    expect(types).toContain('runtime.effect.attempt.started')
    expect(types).toContain('runtime.effect.completed')
    await engine.stop()
  })

  it('a failed ephemeral attempt is recorded as requested and failed', async () => {
    const engine = createEngine({ modules: [eph] })
    const { runId, state } = await engine.start(def, { effect: 'eph.pick', input: { n: 'x' } })
    // A non-numeric input makes a NaN result: not JSON, so the attempt fails.
    expect(state.status).toBe('failed')
    const events = await engine.getEvents(runId)
    const failed = events.find((e) => e.type === 'runtime.effect.failed')
    expect(events.map((e) => e.type)).toContain('runtime.effect.requested')
    expect((failed!.payload as any).error.code).toBe('INVALID_RESULT')
    await engine.stop()
  })

  it('an ephemeral result over maxEventBytes is recorded as a failed attempt, never written', async () => {
    const engine = createEngine({ modules: [eph], limits: { maxEventBytes: 1024 } })
    const { runId, state } = await engine.start(def, { effect: 'eph.huge', input: null })
    expect(state.status).toBe('failed')
    const events = await engine.getEvents(runId)
    expect(events.map((e) => e.type)).toContain('runtime.effect.requested')
    const failed = events.find((e) => e.type === 'runtime.effect.failed')
    expect((failed!.payload as any).error).toMatchObject({
      code: 'INVALID_RESULT',
      message: expect.stringMatching(/4098 bytes, over the limit of 1024/),
    })
    for (const event of events) expect(JSON.stringify(event.payload).length).toBeLessThan(1024)
    await engine.stop()
  })
})
