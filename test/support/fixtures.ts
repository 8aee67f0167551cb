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

/** Effects whose behaviour tests steer through `control`. */
export const control = {
  slowRelease: [] as Array<() => void>,
  aborted: [] as string[],
  executed: [] as string[],
}

export const testEffects = defineModule({
  namespace: 'test',
  events: {
    ping: z.object({ n: z.number() }),
    noted: z.object({ note: z.string() }),
  },
  effects: {
    echo: defineEffect<{ value: unknown }, unknown>({
      execute: async (input) => {
        control.executed.push('echo')
        return input.value
      },
    }),
    slow: defineEffect<null, string>({
      execute: (_input, ctx) =>
        new Promise((resolve, reject) => {
          control.slowRelease.push(() => resolve('slow done'))
          ctx.signal.addEventListener('abort', () => {
            control.aborted.push(ctx.effectId)
            reject(new Error('aborted'))
          })
        }),
    }),
    noting: defineEffect<null, string>({
      execute: async (_input, ctx) => {
        ctx.emit('test.noted', { note: 'emitted with the result' })
        return 'noted'
      },
    }),
    hang: defineEffect<null, string>({
      timeoutMs: 1000,
      retry: { maxAttempts: 2, backoffMs: 10 },
      execute: (_input, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted')))
        }),
    }),
    typed: defineEffect({
      input: z.object({ amount: z.number().positive() }),
      execute: async (input: { amount: number }) => input.amount,
    }),
    external: defineEffect({ execution: 'worker' }),
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

export const slowFlow = defineWorkflow({
  name: 'slow-flow',
  nodes: { s: { run: (ctx) => ctx.invoke('test.slow') } },
})

export const parentFlow = defineWorkflow({
  name: 'parent-flow',
  nodes: {
    child: { run: (ctx) => ctx.spawn(slowFlow) },
    other: { run: (ctx) => ctx.waitFor('test.noted') },
  },
})

export const definitions = [gated, slowFlow, parentFlow]

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
