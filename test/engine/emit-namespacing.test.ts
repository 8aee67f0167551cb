import { commands, createEngine, defineEffect, defineKind, defineModule, type Engine } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'

// A module's effect or kind that emits a name from its own catalog writes
// `namespace.name`, validated by the catalog's schema; a full type still works; anything that
// is neither in the module's catalog nor an application type is refused before it is written.

const emitting = (type: string, payload: unknown) =>
  defineEffect<null, string>({
    execute: async (_input, ctx) => {
      ctx.emit(type, payload as never)
      return 'emitted'
    },
  })

const acme = defineModule({
  namespace: 'acme',
  events: { recorded: z.object({ n: z.number() }) },
  effects: {
    local: emitting('recorded', { n: 1 }),
    full: emitting('acme.recorded', { n: 2 }),
    invalid: emitting('recorded', { n: 'one' }),
    unknown: emitting('recordd', { n: 1 }),
    foreign: emitting('acme.other', { n: 1 }),
    application: emitting('app.noted', { n: 1 }),
  },
  kinds: {
    emitter: defineKind<null>({
      initialState: () => null,
      decide: (_state, ctx) => {
        const { type, payload } = ctx.input as { type: string; payload: never }
        const emitted = ctx.outcome('emitted')
        if (emitted.status === 'completed') return [commands.complete('done')]
        return [commands.emit(type, payload, { key: 'emitted' })]
      },
    }),
  },
  definitions: [{ kind: 'emitter', name: 'emit', version: 'v1' }],
})

/** Waits for `acme.recorded` while the effect that emits it runs beside it. */
const listens = (effect: string) =>
  defineWorkflow({
    name: `listen-${effect}`,
    nodes: {
      heard: { run: (ctx) => ctx.waitFor('acme.recorded') },
      emit: { run: (ctx) => ctx.invoke(`acme.${effect}`, null) },
    },
  })

const flows = ['local', 'full', 'invalid', 'unknown', 'foreign', 'application'].map(listens)
let engine: Engine
afterEach(() => engine?.stop())

function makeEngine() {
  engine = createEngine({
    modules: [workflow({ definitions: flows }), acme],
    clock: manualClock(),
  })
  return engine
}

const typesOf = async (runId: string) => (await engine.getEvents(runId)).map((e) => e.type)

describe('ctx.emit in a module effect', () => {
  it('resolves a local catalog name to namespace.name, which waitFor matches', async () => {
    makeEngine()
    const { runId, state } = await engine.start(flows[0])
    expect(state.status).toBe('completed')
    const events = await engine.getEvents(runId)
    const recorded = events.filter((e) => e.type === 'acme.recorded')
    expect(recorded.map((e) => e.payload)).toEqual([{ n: 1 }])
    expect(events.some((e) => e.type === 'recorded')).toBe(false)
  })

  it('still accepts the full type', async () => {
    makeEngine()
    const { runId, state } = await engine.start(flows[1])
    expect(state.status).toBe('completed')
    expect(
      (await engine.getEvents(runId)).find((e) => e.type === 'acme.recorded')?.payload,
    ).toEqual({ n: 2 })
  })

  it('validates a local name against the catalog schema: the attempt fails, nothing is written', async () => {
    makeEngine()
    const { runId, state } = await engine.start(flows[2])
    expect(state.status).toBe('failed')
    const types = await typesOf(runId)
    expect(types).not.toContain('acme.recorded')
    expect(types).not.toContain('recorded')
    const failed = (await engine.getEvents(runId)).find((e) => e.type === 'runtime.effect.failed')
    expect((failed?.payload as any)?.error.code).toBe('INVALID_EVENT')
  })

  it('refuses names outside its catalog (local or full); allows application types', async () => {
    makeEngine()
    for (const [flow, refused] of [
      [flows[3], 'recordd'],
      [flows[4], 'acme.other'],
    ] as const) {
      const { runId, state } = await engine.start(flow)
      expect(state.status, refused).toBe('failed')
      expect(await typesOf(runId)).not.toContain(refused)
      const failed = (await engine.getEvents(runId)).find((e) => e.type === 'runtime.effect.failed')
      expect((failed?.payload as any)?.error).toMatchObject({ code: 'INVALID_EVENT' })
    }
    const app = await engine.start(flows[5])
    expect(await typesOf(app.runId)).toContain('app.noted')
  })
})

describe("a kind's emit command", () => {
  it('resolves local names, keeps full and application types, refuses the rest before writing', async () => {
    makeEngine()
    const start = (type: string, payload: unknown) =>
      engine.startRun({
        kind: 'emitter',
        definitionName: 'emit',
        input: { type, payload } as never,
      })

    const local = await start('recorded', { n: 3 })
    expect(local.state.status).toBe('completed')
    expect(await typesOf(local.runId)).toContain('acme.recorded')
    expect((await start('acme.recorded', { n: 4 })).state.status).toBe('completed')
    expect((await start('app.noted', {})).state.status).toBe('completed')

    for (const [type, payload] of [
      ['recorded', { n: 'x' }],
      ['recordd', { n: 1 }],
      ['runtime.run.completed', {}],
      ['RUNTIME.run.completed', {}],
      ['acme..recorded', { n: 1 }],
    ] as const) {
      const { runId, state } = await start(type, payload)
      expect(state.status, type).toBe('failed')
      expect(state.threads[state.rootThreadId].error?.code, type).toBe('INVALID_EVENT')
      const types = await typesOf(runId)
      expect(types.filter((t) => !t.startsWith('runtime.'))).toEqual([])
    }
  })
})
