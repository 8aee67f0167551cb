// The projector crash loop's workload, shared by the child (which runs it) and the parent.
import { appendFileSync } from 'node:fs'
import { defineEffect, defineModule, defineProjector, type Module } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'

export const crashEffects = defineModule({
  namespace: 'pc',
  effects: {
    work: defineEffect<{ step: string }, { step: string }>({
      retry: { maxAttempts: 10, backoffMs: 5 },
      execute: async (input) => {
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 3)))
        return { step: input.step }
      },
    }),
  },
})

/** Four effects and a short durable timer: a dozen commits per run. */
export const chain = defineWorkflow({
  name: 'chain',
  nodes: {
    a: { run: (ctx) => ctx.invoke('pc.work', { step: 'a' }) },
    b: { after: ['a'], run: (ctx) => ctx.invoke('pc.work', { step: 'b' }) },
    nap: { after: ['a'], run: (ctx) => ctx.sleep(5 + ((ctx.input as { n: number }).n % 20)) },
    c: { after: ['b', 'nap'], run: (ctx) => ctx.invoke('pc.work', { step: 'c' }) },
    d: { after: ['c'], run: (ctx) => ctx.invoke('pc.work', { step: 'd' }) },
  },
})

export const crashModules = (): Module[] => [workflow({ definitions: [chain] }), crashEffects]

/**
 * Records every batch it is handed as one line `runId first last` before returning (the
 * checkpoint moves only after), so the file holds at least what was checkpointed.
 */
export const recordingProjector = (path: string) =>
  defineProjector({
    name: 'recorder',
    handle({ runId, events }) {
      const seqs = events.map((e) => e.seq)
      for (let i = 1; i < seqs.length; i++) {
        if (seqs[i] !== seqs[i - 1] + 1) throw new Error(`batch of ${runId} is not consecutive`)
      }
      appendFileSync(path, `${runId} ${seqs[0]} ${seqs[seqs.length - 1]}\n`)
    },
  })

/** mulberry32: the seeded source of the loop's random choices. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
