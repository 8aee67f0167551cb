import { createEngine, type Json } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'

// `engine.start(definition)` types `state.output` by the definition's output.

const priced = defineWorkflow({
  name: 'priced',
  input: z.object({ qty: z.number() }),
  nodes: { price: { run: ({ input }) => ({ cents: input.qty * 250 }) } },
  output: ({ results }) => ({ total: results.price.cents }),
})
const untyped = { kind: 'workflow', name: 'priced', version: 'v1' } as const

describe('start types the output', () => {
  it('state.output is the definition output, Json for an untyped definition', async () => {
    const engine = createEngine({ modules: [workflow({ definitions: [priced] })] })
    const { state } = await engine.start(priced, { qty: 2 })
    expectTypeOf(state.output).toEqualTypeOf<{ total: number } | undefined>()
    expect(state.output?.total).toBe(500)
    // @ts-expect-error: the output has no such field
    expect(state.output?.cents).toBeUndefined()
    const other = await engine.start(untyped, { qty: 1 })
    expectTypeOf(other.state.output).toEqualTypeOf<Json | undefined>()
    await engine.stop()
  })
})
