// An actor host on shared Postgres cells, in its own process (the two-host proofs).
// argv: <schema> <calls-url> <host-name> <lease-ms>. Prints `READY <url>` once it serves; stops
// cleanly on SIGTERM. The effect `as.call` is the "external service": it calls the parent's
// counter over HTTP, which holds the answer a while, so a kill lands mid-call.
import { consoleLogger, defineEffect, defineModule } from 'skein'
import { createActorHost, postgresRegistry, sharedCells } from 'skein/actor'
import { postgresStore } from 'skein/postgres'
import { defineWorkflow, workflow } from 'skein/workflow'

const [schema, callsUrl, hostName, leaseText] = process.argv.slice(2)
const url = process.env.SKEIN_PG_URL
if (!url) throw new Error('actor-shared-child needs SKEIN_PG_URL')

const effects = defineModule({
  namespace: 'as',
  effects: {
    call: defineEffect<{ step: string }, { step: string; host: string }>({
      retry: { maxAttempts: 8, backoffMs: 50 },
      execute: async (input, ctx) => {
        const query = new URLSearchParams({
          run: ctx.runId,
          step: input.step,
          host: hostName as string,
          attempt: String(ctx.attempt),
        })
        const res = await fetch(`${callsUrl}/call?${query}`, { method: 'POST' })
        if (!res.ok) throw new Error(`counter answered ${res.status}`)
        return { step: input.step, host: hostName as string }
      },
    }),
  },
})

/** charge (external call) → sleep `input.ms` (a durable timer) → ship (external call). */
const relay = defineWorkflow({
  name: 'relay',
  nodes: {
    charge: { run: (ctx) => ctx.invoke('as.call', { step: 'charge' }) },
    nap: {
      after: ['charge'],
      run: (ctx) => ctx.sleep(Number((ctx.input as { ms?: number })?.ms ?? 0)),
    },
    ship: { after: ['nap'], run: (ctx) => ctx.invoke('as.call', { step: 'ship' }) },
  },
})

const store = postgresStore(
  { connectionString: url },
  { schema, maxConnections: 4, pollIntervalMs: 250 },
)
const host = createActorHost({
  modules: [workflow({ definitions: [relay] }), effects],
  // As if the hosts were on other machines: a dead owner is noticed only when its lease expires.
  cells: sharedCells({
    store,
    ownership: { leaseMs: Number(leaseText ?? 3000), pollMs: 100, isGone: () => false },
  }),
  registry: postgresRegistry({ store }),
  // Small: cells close and open all the time, and move between the hosts.
  maxOpenCells: 8,
  idleTimeoutMs: 200,
  sweepMs: 100,
  logger: consoleLogger({
    level: 'warn',
    format: 'json',
    write: (line) => process.stderr.write(line),
  }),
})
const server = await host.serve({ port: 0, hostname: '127.0.0.1' })
await host.recovered
process.stdout.write(`READY ${server.url}\n`)
process.on('SIGTERM', () => {
  void (async () => {
    await host.stop({ graceMs: 1000 })
    await store.close()
    process.exit(0)
  })()
})
