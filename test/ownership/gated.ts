// The workload of the ownership proofs: `gated` waits for `go`, then calls `own.slow`; once
// `go2` came too (its wait is open from the start), it calls `own.slow` again and completes.
// Each execution of `own.slow` appends one line to `callsFile` (the "external service").
import { appendFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { defineEffect, defineModule } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'

export const gated = defineWorkflow({
  name: 'gated',
  nodes: {
    gate: { run: (ctx) => ctx.waitFor('go') },
    call: {
      after: ['gate'],
      run: (ctx) => ctx.invoke('own.slow', { runId: ctx.runId, round: 1 }),
    },
    gate2: { run: (ctx) => ctx.waitFor('go2') },
    call2: {
      after: ['gate2', 'call'],
      run: (ctx) => ctx.invoke('own.slow', { runId: ctx.runId, round: 2 }),
    },
  },
})

export function gatedModules(options: { callsFile?: string; name: string; effectMs: number }) {
  const external = defineModule({
    namespace: 'own',
    effects: {
      slow: defineEffect<{ runId: string; round: number }, string>({
        retry: { maxAttempts: 10, backoffMs: 10 },
        execute: async (input, ctx) => {
          if (options.callsFile) {
            const line = { runId: input.runId, round: input.round, attempt: ctx.attempt }
            appendFileSync(options.callsFile, `${JSON.stringify({ ...line, by: options.name })}\n`)
          }
          await sleep(options.effectMs)
          return `done by ${options.name}`
        },
      }),
    },
  })
  return [workflow({ definitions: [gated] }), external]
}
