// The kill loop's definitions, shared by the child process (which runs them) and the parent
// (which folds the logs it left behind with the same registry).
import { setTimeout as sleep } from 'node:timers/promises'
import { defineEffect, defineInput, defineModule, type Module } from 'skein'
import { approval } from 'skein/approval'
import { defineWorkflow, workflow } from 'skein/workflow'
import { z } from 'zod'

export const killEffects = defineModule({
  namespace: 'kl',
  // The child pokes its runs from outside, so poke is an input (it needs a checking schema).
  events: { poke: defineInput(z.object({ runId: z.string(), note: z.string().optional() })) },
  effects: {
    /** Takes a few ms of real time, so kills land mid-attempt too. */
    work: defineEffect<{ step: string }, { step: string }>({
      retry: { maxAttempts: 10, backoffMs: 5 },
      execute: async (input) => {
        await sleep(Math.floor(Math.random() * 4))
        return { step: input.step }
      },
    }),
    /** Fails its first attempt: a durable retry with backoff on every run. */
    flaky: defineEffect<null, { attempt: number }>({
      retry: { maxAttempts: 10, backoffMs: 15 },
      execute: async (_input, ctx) => {
        if (ctx.attempt === 1) throw new Error('first attempt always fails')
        return { attempt: ctx.attempt }
      },
    }),
  },
})

/** Effects, a retry, a real timer, a signal wait and an approval gate. */
export const mixed = defineWorkflow({
  name: 'mixed',
  nodes: {
    fetch: { run: (ctx) => ctx.invoke('kl.work', { step: 'fetch' }) },
    flaky: { after: ['fetch'], run: (ctx) => ctx.invoke('kl.flaky') },
    nap: {
      after: ['fetch'],
      run: (ctx) => ctx.sleep(20 + ((ctx.input as { n: number }).n % 5) * 15),
    },
    poke: { after: ['nap'], run: (ctx) => ctx.waitFor('kl.poke', { match: { runId: ctx.runId } }) },
    review: { after: ['flaky', 'poke'], run: (ctx) => ctx.gate({ title: 'ship it?' }) },
    finish: { after: ['review'], run: (ctx) => ctx.invoke('kl.work', { step: 'finish' }) },
  },
})

/** Three effects in a row, no waits. */
export const quick = defineWorkflow({
  name: 'quick',
  nodes: {
    a: { run: (ctx) => ctx.invoke('kl.work', { step: 'a' }) },
    b: { after: ['a'], run: (ctx) => ctx.invoke('kl.work', { step: 'b' }) },
    c: { after: ['b'], run: (ctx) => ctx.invoke('kl.work', { step: 'c' }) },
  },
})

export const NODES: Record<string, string[]> = {
  mixed: ['fetch', 'flaky', 'nap', 'poke', 'review', 'finish'],
  quick: ['a', 'b', 'c'],
}

export const killModules = (): Module[] => [
  workflow({ definitions: [mixed, quick] }),
  approval(),
  killEffects,
]
