import { defineEffect, defineModule } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'

// An in-process handler may return a value, a promise, any thenable, or throw: each ends its
// attempt the same way a promise of it would.

const newEngine = enginesStoppedAfterEach()

const thenable = (settle: (ok: (v: unknown) => void, fail: (e: unknown) => void) => void) => ({
  // biome-ignore lint/suspicious/noThenProperty: a hand-made thenable is the point of the test
  then: (ok: (v: unknown) => void, fail: (e: unknown) => void) => settle(ok, fail),
})

const handlers: Record<string, () => unknown> = {
  syncValue: () => ({ n: 1 }),
  promise: async () => ({ n: 2 }),
  thenable: () => thenable((ok) => setTimeout(() => ok({ n: 3 }), 1)),
  // biome-ignore lint/suspicious/noThenProperty: a `then` that is not a function is plain data
  notThenable: () => ({ then: 'not a function', n: 4 }),
  syncThrow: () => {
    throw new Error('sync boom')
  },
  rejected: async () => {
    throw new Error('async boom')
  },
  rejectingThenable: () => thenable((_ok, fail) => fail(new Error('thenable boom'))),
  throwingThen: () =>
    Object.defineProperty({}, 'then', {
      get() {
        throw new Error('then getter boom')
      },
    }),
}

const fx = defineModule({
  namespace: 'fx',
  effects: Object.fromEntries(
    Object.entries(handlers).map(([name, execute]) => [
      name,
      defineEffect({ execute, retry: { maxAttempts: 1 } }),
    ]),
  ),
})
const flows = Object.fromEntries(
  Object.keys(handlers).map((name) => [
    name,
    defineWorkflow({ name, nodes: { only: { run: (ctx) => ctx.invoke(`fx.${name}`, null) } } }),
  ]),
)
const start = (name: string) =>
  newEngine({ modules: [workflow({ definitions: Object.values(flows) }), fx] }).start(
    flows[name],
    undefined,
    { wait: 'settled' }, // the thenable settles on a timer
  )

describe('in-process handler results', () => {
  it.each([
    ['syncValue', { n: 1 }],
    ['promise', { n: 2 }],
    ['thenable', { n: 3 }],
    // biome-ignore lint/suspicious/noThenProperty: the value the handler returned
    ['notThenable', { then: 'not a function', n: 4 }],
  ])('%s completes the attempt with its value', async (name, value) => {
    const { state } = await start(name)
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ only: value })
  })

  it.each([
    ['syncThrow', 'sync boom'],
    ['rejected', 'async boom'],
    ['rejectingThenable', 'thenable boom'],
    ['throwingThen', 'then getter boom'],
  ])('%s fails the attempt with its error', async (name, message) => {
    const { state } = await start(name)
    expect(state.status).toBe('failed')
    expect(JSON.stringify(state.error)).toContain(message)
  })
})
