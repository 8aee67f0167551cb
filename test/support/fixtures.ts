import {
  commands,
  createEngine,
  defineEffect,
  defineKind,
  defineModule,
  type EngineOptions,
} from 'skein'
import { approval } from 'skein/approval'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { z } from 'zod'

export const testEffects = defineModule({
  namespace: 'test',
  events: {
    ping: z.object({ n: z.number() }),
    noted: z.object({ note: z.string() }),
  },
  effects: {
    typed: defineEffect({
      input: z.object({ amount: z.number().positive() }),
      execute: async (input: { amount: number }) => input.amount,
    }),
  },
  kinds: {
    looper: defineKind<number>({
      initialState: () => 0,
      step: (n, event) => (event.type === 'test.ping' ? n + 1 : n),
      decide: (n) => [commands.emit('test.ping', { n })],
    }),
  },
  definitions: [{ kind: 'looper', name: 'forever', version: 'v1' }],
})

export const orderInput = z.object({ orderId: z.string(), amount: z.number() })

export const gated = defineWorkflow({
  name: 'gated',
  input: orderInput,
  nodes: {
    check: { run: ({ input }) => ({ ok: input.amount < 1000 }) },
    approve: { after: ['check'], run: (ctx) => ctx.gate({ title: `Order ${ctx.input.orderId}` }) },
    done: { after: ['approve'], run: ({ results }) => results.approve.outcome },
  },
})

export const definitions = [gated]

export function makeEngine(extra: EngineOptions = {}) {
  const clock = manualClock()
  const engine = createEngine({
    modules: [workflow({ definitions }), approval(), testEffects],
    clock,
    ...extra,
  })
  return { engine, clock }
}

/** Lets in-flight promise chains (effect executions) run. */
export const flush = async (rounds = 5) => {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r))
}
