import { commands, createEngine, defineEffect, defineKind, defineModule } from 'skein'
import { describe, expect, it } from 'vitest'

const echo = defineEffect<{ n: number }, { doubled: number }>({
  execute: async (input) => ({ doubled: input.n * 2 }),
})

const chain = defineKind<null>({
  initialState: () => null,
  decide: (_state, ctx) => {
    const first = ctx.outcome('a')
    if (first.status === 'none' || first.status === 'pending')
      return [commands.invoke('demo.echo', { n: 2 }, { key: 'a' })]
    if (first.status !== 'completed') return [commands.fail('a failed')]
    const second = ctx.outcome('b')
    const n = (first.value as any).doubled
    if (second.status === 'none' || second.status === 'pending')
      return [commands.invoke('demo.echo', { n }, { key: 'b' })]
    if (second.status !== 'completed') return [commands.fail('b failed')]
    return [commands.complete(second.value)]
  },
})

const def = { kind: 'chain', name: 'double-twice', version: 'v1' } as const
const demo = defineModule({
  namespace: 'demo',
  effects: { echo },
  kinds: { chain },
  definitions: [def],
})

describe('engine smoke', () => {
  it('runs a two-effect chain to completion', async () => {
    const engine = createEngine({ modules: [demo] })
    const { runId, state } = await engine.start(def)
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ doubled: 8 })
    const events = await engine.getEvents(runId)
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
    expect(events.map((e) => e.type)).toMatchInlineSnapshot(`
      [
        "runtime.run.started",
        "runtime.thread.started",
        "runtime.effect.requested",
        "runtime.effect.attempt.started",
        "runtime.effect.completed",
        "runtime.effect.requested",
        "runtime.effect.attempt.started",
        "runtime.effect.completed",
        "runtime.thread.completed",
        "runtime.run.completed",
      ]
    `)
    await engine.stop()
  })
})
