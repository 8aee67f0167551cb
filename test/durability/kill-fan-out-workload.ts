// The workload of the fan-out and compensation kill loop (kill-fan-out.test.ts): a 200-item
// fan-out and sagas that compensate. Each effect execution appends a line to the calls file.
import { appendFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { defineEffect, defineModule, type Module, TerminalError } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'

export const ITEMS = 200
export const SAGAS = 6

let callsPath = ''
const call = (line: string) => appendFileSync(callsPath, `${line}\n`)
const retry = { maxAttempts: 100, backoffMs: 5 }
const item = defineEffect({
  retry,
  execute: async (input: { n: number }, ctx) => {
    call(`item ${input.n} ${ctx.effectId} ${ctx.attempt}`)
    await sleep(Math.random() * 60)
    return input.n * 2
  },
})
const step = defineEffect({
  retry,
  execute: async (input: { run: string; node: string }) => {
    await sleep(Math.random() * 10)
    call(`do ${input.run} ${input.node}`)
    return `${input.node}-done`
  },
})
const undo = defineEffect({
  retry,
  execute: async (input: { run: string; node: string }, ctx) => {
    call(`undo ${input.run} ${input.node} ${ctx.effectId} ${ctx.attempt}`)
    await sleep(150 + Math.random() * 250)
    return `${input.node}-undone`
  },
})
const boom = defineEffect({
  execute: async () => {
    throw new TerminalError('the last step always fails')
  },
})
const kl = defineModule({ namespace: 'klf', effects: { item, step, undo, boom } })

const fan = defineWorkflow({
  name: 'fan',
  nodes: {
    all: {
      run: (ctx) =>
        ctx.map(
          Array.from({ length: ITEMS }, (_, n) => n),
          (n) => ctx.invoke(item, { n }),
          { concurrency: 8 },
        ),
    },
  },
  output: ({ results }) => results.all,
})
const compensable = <A extends readonly string[]>(node: string, after: A) => ({
  after,
  run: (ctx: any) => ctx.invoke(step, { run: ctx.runId, node }),
  compensate: (ctx: any) => ctx.invoke(undo, { run: ctx.runId, node }),
})
const saga = defineWorkflow({
  name: 'saga',
  nodes: {
    a: compensable('a', [] as const),
    b: compensable('b', ['a'] as const),
    c: compensable('c', ['b'] as const),
    fail: { after: ['c'], run: (ctx) => ctx.invoke(boom, null) },
  },
})

/** The modules of the workload; its effects append to `calls` (the child's only). */
export function fanOutModules(calls = ''): Module[] {
  callsPath = calls
  return [workflow({ definitions: [fan, saga] }), kl]
}
export { fan, saga }
