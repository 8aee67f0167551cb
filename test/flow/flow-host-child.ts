// One engine process of the flow-control proofs (flow-hosts.test.ts, controls-hosts.test.ts,
// flow-kill.test.ts), spawned by flow-hosts.ts with
// `node --conditions=skein-source --import tsx flow-host-child.ts <storeSpec> <log> <json>`.
// Serves HTTP on 127.0.0.1 (prints `port <n>`). Its handlers write one JSON line to <log> when
// they start and one when they end (appendFileSync: the lines of every process on the machine
// are in the order they happened), so the test measures concurrency from the handlers' side.
import { appendFileSync } from 'node:fs'
import { createEngine, defineEffect, defineModule } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { openStoreSpec } from '../durability/store-spec.js'

const [storeSpec, logFile, optionsText] = process.argv.slice(2)
const options = JSON.parse(optionsText ?? '{}') as {
  name: string
  effectMs?: number
  leaseMs?: number
  runLimit?: number
  effectLimit?: number
  /** `rated`'s admissions per second (default 20). */
  rateLimit?: number
  /** `debounced`'s quiet period (default 1500 ms). */
  debounceMs?: number
}
const name = options.name
const effectMs = options.effectMs ?? 20
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Records the handler's start and end (the end only if this process lives to see it). */
async function measured(what: string, key: string, runId: string, ms: number) {
  const line = (edge: string) =>
    `${JSON.stringify({ what, key, runId, edge, host: name, at: Date.now(), pid: process.pid })}\n`
  appendFileSync(logFile, line('start'))
  await sleep(ms)
  appendFileSync(logFile, line('end'))
  return { key, host: name }
}

const work = defineEffect({
  execute: (input: { key: string }, ctx) => measured('run', input.key, ctx.runId, effectMs),
})
const limited = defineEffect({
  concurrency: { limit: options.effectLimit ?? 2 },
  execute: (input: { key: string }, ctx) => measured('effect', input.key, ctx.runId, effectMs),
})
const probe = defineModule({ namespace: 'probe', effects: { work, limited } })

/** At most `runLimit` runs per key at once; each calls `probe.work` once. */
const keyed = defineWorkflow({
  name: 'keyed',
  flow: {
    concurrency: { limit: options.runLimit ?? 3, key: (input: { key: string }) => input.key },
  },
  nodes: { work: { run: (ctx) => ctx.invoke(work, ctx.input as { key: string }) } },
})
/** No run limit; its effect allows `effectLimit` attempts in flight on the whole store. */
const calling = defineWorkflow({
  name: 'calling',
  nodes: { call: { run: (ctx) => ctx.invoke(limited, ctx.input as { key: string }) } },
})
/** Parks on a signal (fairness: the admitted runs hold their slots until told). */
const parked = defineWorkflow({
  name: 'parked',
  flow: { concurrency: { limit: 1, key: (input: { key: string }) => input.key } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})

type Keyed = { k: string; n: number }
const byK = (input: Keyed) => input.k
/** Each rate- or debounce-controlled run calls `probe.work` once, under its run's key. */
const worked = {
  n: { run: (ctx: any) => ctx.input },
  work: {
    after: ['n'] as const,
    run: (ctx: any) => ctx.invoke(work, { key: (ctx.input as Keyed).k }),
  },
}
/** At most `rateLimit` admissions in any second, over every process. */
const rated = defineWorkflow({
  name: 'rated',
  flow: { rate: { limit: options.rateLimit ?? 20, periodMs: 1000 } },
  nodes: worked,
})
/** Starts of one key within `debounceMs` of each other are one run, on the last input. */
const debounced = defineWorkflow({
  name: 'debounced',
  flow: { debounce: { periodMs: options.debounceMs ?? 1500, key: byK } },
  nodes: worked,
})
const skipper = defineWorkflow({
  name: 'skipper',
  flow: { singleton: { key: byK, mode: 'skip' } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})
const queuer = defineWorkflow({
  name: 'queuer',
  flow: { singleton: { key: byK, mode: 'queue' } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})

const definitions = [keyed, calling, parked, rated, debounced, skipper, queuer]
const engine = createEngine({
  store: openStoreSpec(storeSpec),
  modules: [workflow({ definitions }), probe],
  ownership: { leaseMs: options.leaseMs ?? 2000, pollMs: 100 },
  observer: (o) => {
    if (o.type === 'effect.interrupted') process.stdout.write(`interrupted ${o.runId}\n`)
  },
})
await engine.ready()
const server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
process.stdout.write(`port ${server.port}\n`)
process.on('SIGTERM', async () => {
  await engine.stop({ graceMs: 0 })
  process.exit(0)
})
setInterval(() => {}, 60_000)
