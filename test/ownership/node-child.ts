// One process of an ownership cluster (test/support/ownership-cluster.ts), spawned with
// `node --conditions=skein-source --import tsx node-child.ts <storeSpec> <callsFile> <json>`.
// Serves the engine over HTTP on 127.0.0.1 (prints `port <n>`), runs the `gated` workflow
// (wait for a `go` signal, then a slow in-process effect; a second one once `go2` came too; that appends a line to the calls
// file per execution: the "external service"), and prints `lease-lost <runId>` whenever one
// of its appends is refused for a stale lease.
import { appendFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { createEngine, defineEffect, defineModule } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { openStoreSpec } from '../durability/store-spec.js'

const [storeSpec, callsFile, optionsText] = process.argv.slice(2)
const options = JSON.parse(optionsText ?? '{}') as {
  effectMs?: number
  leaseMs?: number
  renewMs?: number
  pollMs?: number
  name?: string
}
const name = options.name ?? String(process.pid)

const external = defineModule({
  namespace: 'own',
  effects: {
    slow: defineEffect<{ runId: string; round: number }, string>({
      retry: { maxAttempts: 10, backoffMs: 10 },
      execute: async (input, ctx) => {
        appendFileSync(
          callsFile,
          `${JSON.stringify({ runId: input.runId, round: input.round, attempt: ctx.attempt, by: name })}\n`,
        )
        await sleep(options.effectMs ?? 1000)
        return `done by ${name}`
      },
    }),
  },
})

const gated = defineWorkflow({
  name: 'gated',
  nodes: {
    gate: { run: (ctx) => ctx.waitFor('go') },
    call: {
      after: ['gate'],
      run: (ctx) => ctx.invoke('own.slow', { runId: ctx.runId, round: 1 }),
    },
    // Open from the start, so a `go2` sent while the first effect runs is matched.
    gate2: { run: (ctx) => ctx.waitFor('go2') },
    call2: {
      after: ['gate2', 'call'],
      run: (ctx) => ctx.invoke('own.slow', { runId: ctx.runId, round: 2 }),
    },
  },
})

const engine = createEngine({
  store: openStoreSpec(storeSpec),
  modules: [workflow({ definitions: [gated] }), external],
  ownership: {
    leaseMs: options.leaseMs ?? 2000,
    renewMs: options.renewMs,
    pollMs: options.pollMs ?? 100,
  },
  observer: (o) => {
    if (o.type === 'append' && o.outcome === 'error' && String(o.error).includes('lease')) {
      process.stdout.write(`lease-lost ${o.runId}\n`)
    }
    if (o.type === 'effect.interrupted') process.stdout.write(`interrupted ${o.runId}\n`)
  },
})
const server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
process.stdout.write(`port ${server.port}\n`)
process.on('SIGTERM', async () => {
  await engine.stop({ graceMs: 0 })
  process.exit(0)
})
setInterval(() => {}, 60_000)
