// A workflow declares the effects it invokes (`effects`): createEngine refuses it, naming the
// effect and how to register it, when no module registers one, instead of the first run that
// invokes it failing at run time.
import { createEngine, defineEffect, defineModule } from 'skein'
import { replaceEffects } from 'skein/testing'
import { defineOrderedWorkflow, defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'

const charge = defineEffect({ execute: async (input: { cents: number }) => `c-${input.cents}` })
const shop = defineModule({ namespace: 'shop', effects: { charge } })
const order = defineWorkflow({
  name: 'order',
  effects: [charge],
  nodes: { charge: { run: (ctx) => ctx.invoke(charge, { cents: 5 }) } },
})

describe('declared effects', () => {
  it('an effect object no module registers is refused at createEngine, with how to register it', () => {
    let error: unknown
    try {
      createEngine({ modules: [workflow({ definitions: [order] })] })
    } catch (thrown) {
      error = thrown
    }
    expect((error as { code?: string }).code).toBe('MODULE_COMPOSITION')
    expect(String(error)).toContain('definition workflow:order@v1 declares effect effects[0]')
    expect(String(error)).toContain("add it to a module's effects")
  })

  it('an effect type no module registers is refused by name', () => {
    const byType = defineOrderedWorkflow({
      name: 'by-type',
      effects: ['shop.refund'],
      nodes: [{ id: 'a', run: (ctx) => ctx.invoke('shop.refund', null) }],
    })
    expect(() => createEngine({ modules: [workflow({ definitions: [byType] }), shop] })).toThrow(
      /declares effect "shop\.refund", which no module registers/,
    )
  })

  it('registered, or replaced by a fake in a test, the workflow runs', async () => {
    const engine = createEngine({ modules: [workflow({ definitions: [order] }), shop] })
    expect((await engine.start(order, undefined, { wait: 'settled' })).state.output).toEqual({
      charge: 'c-5',
    })
    await engine.stop()
    const faked = createEngine({
      modules: replaceEffects([workflow({ definitions: [order] }), shop], [[charge, () => 'fake']]),
    })
    expect((await faked.start(order, undefined, { wait: 'settled' })).state.output).toEqual({
      charge: 'fake',
    })
    await faked.stop()
  })
})
