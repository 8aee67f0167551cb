// One engine host on a Postgres schema, serving HTTP (the many-hosts proofs spawn three).
// argv: <schema> <calls-url> <host-name>. Prints `READY <url>` once it serves. The effect
// `ph.call` is the "external service": it calls the parent's counter over HTTP, which holds
// the answer a while, so a kill lands mid-call.
import { createEngine, defineEffect, defineInput, defineModule, type EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { defineWorkflow, workflow } from 'skein/workflow'
import { z } from 'zod'

const [schema, callsUrl, hostName] = process.argv.slice(2)
const url = process.env.SKEIN_PG_URL
if (!url) throw new Error('pg-host-child needs SKEIN_PG_URL')

const effects = defineModule({
  namespace: 'ph',
  events: { go: defineInput(z.object({ runId: z.string() })) },
  effects: {
    call: defineEffect<{ step: string }, { step: string; host: string }>({
      retry: { maxAttempts: 8, backoffMs: 50 },
      execute: async (input, ctx) => {
        const query = new URLSearchParams({
          run: ctx.runId,
          step: input.step,
          host: hostName,
          attempt: String(ctx.attempt),
        })
        const res = await fetch(`${callsUrl}/call?${query}`, { method: 'POST' })
        if (!res.ok) throw new Error(`counter answered ${res.status}`)
        return { step: input.step, host: hostName }
      },
    }),
  },
})

/** charge (external call) → wait for `ph.go` → ship (external call). */
const relay = defineWorkflow({
  name: 'relay',
  nodes: {
    charge: { run: (ctx) => ctx.invoke('ph.call', { step: 'charge' }) },
    go: { after: ['charge'], run: (ctx) => ctx.waitFor('ph.go', { match: { runId: ctx.runId } }) },
    ship: { after: ['go'], run: (ctx) => ctx.invoke('ph.call', { step: 'ship' }) },
  },
})

/**
 * The rolling-deploy proofs' workflow, in the versions PG_HOST_ORDER lists (`v1`, `v1,v2`,
 * `v2`; none by default): parked on `ord.paid` or, with `timerMs`, a timer; then `done` names
 * the version and the host that finished it. v2 adds a node (another shape, a new version).
 */
const orderVersions = (process.env.PG_HOST_ORDER ?? '').split(',').filter(Boolean)
const order = (version: string) =>
  defineWorkflow({
    name: 'order',
    version,
    nodes: {
      park: {
        run: (ctx) => {
          const { timerMs } = (ctx.input ?? {}) as { timerMs?: number }
          return timerMs ? ctx.sleep(timerMs) : ctx.waitFor('ord.paid')
        },
      },
      ...(version === 'v2' && { audit: { after: ['park'], run: () => 'audited' } }),
      done: { after: ['park'], run: () => ({ version, host: hostName }) },
    },
  })

/**
 * Engine options from PG_HOST_ENGINE_OPTIONS (JSON). `ownership.remote: true` stands for hosts
 * on other machines: no owner counts as gone before its lease expires (no pid check).
 */
function engineOptions(): Record<string, any> {
  // Ownership on unless the test says otherwise: these hosts share one schema.
  const options = { ownership: {}, ...JSON.parse(process.env.PG_HOST_ENGINE_OPTIONS || '{}') }
  if (options.ownership?.remote) {
    const { remote: _, ...ownership } = options.ownership
    options.ownership = { ...ownership, isGone: () => false }
  }
  return options
}

const store = postgresStore(
  { connectionString: url },
  { schema, maxConnections: 4, pollIntervalMs: 250 },
)
// Refused appends and renewals are printed (`refused append <run>`), so the fencing proof can
// tell a refused stale write from one never tried.
const refused = (what: string, runId: string) => (error: unknown) => {
  if ((error as { code?: string })?.code === 'LEASE_LOST')
    process.stdout.write(`refused ${what} ${runId}\n`)
  throw error
}
const watched: EventStore = {
  ...store,
  append: (runId, events, options) =>
    store.append(runId, events, options).catch(refused('append', runId)),
  leases: {
    ...store.leases,
    renewLease: (runId, claim) =>
      store.leases.renewLease(runId, claim).catch(refused('renewal', runId)),
  },
}
const engine = createEngine({
  store: watched,
  modules: [workflow({ definitions: [relay, ...orderVersions.map(order)] }), effects],
  ...engineOptions(),
})
await engine.ready()
const server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
process.stdout.write(`READY ${server.url}\n`)

const stop = async () => {
  await engine.stop({ graceMs: 1000 })
  await store.close()
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
