// One process of an ownership cluster (test/support/ownership-cluster.ts), spawned with
// `node --conditions=skein-source --import tsx node-child.ts <storeSpec> <callsFile> <json>`.
// Serves the engine over HTTP on 127.0.0.1 (prints `port <n>`), runs the `gated` workflow
// (gated.ts), and prints `lease-lost <runId>` when an append is refused for its lease,
// `renew-lost <runId>` when a renewal is, and `interrupted <runId>` when it records an attempt
// as interrupted.
import { appendFileSync } from 'node:fs'
import { createEngine, type EventStore } from 'skein'
import { openStoreSpec } from '../durability/store-spec.js'
import { gatedModules } from './gated.js'

const [storeSpec, callsFile, optionsText] = process.argv.slice(2)
const options = JSON.parse(optionsText ?? '{}') as {
  effectMs?: number
  leaseMs?: number
  renewMs?: number
  pollMs?: number
  name?: string
}
const name = options.name ?? String(process.pid)
let continued = false
process.on('SIGCONT', () => {
  continued = true
  process.stdout.write('continued\n')
})

// Every append the store accepted, with the lease it carried, for the fencing check: per run,
// accepted epochs never go down in seq order.
const inner = openStoreSpec(storeSpec)
const acceptedFile = `${callsFile}.appends`
const store: EventStore = Object.assign(Object.create(inner) as EventStore, {
  append: async (...args: Parameters<EventStore['append']>) => {
    await inner.append(...args)
    const [runId, events, opts] = args
    if (events.length === 0) return
    appendFileSync(
      acceptedFile,
      `${JSON.stringify({ runId, seq: events[0].seq, owner: name, epoch: opts.lease?.epoch ?? null, at: Date.now() })}\n`,
    )
  },
})

const engine = createEngine({
  store,
  modules: gatedModules({ callsFile, name, effectMs: options.effectMs ?? 1000 }),
  ownership: {
    leaseMs: options.leaseMs ?? 2000,
    renewMs: options.renewMs,
    pollMs: options.pollMs ?? 100,
  },
  observer: (o) => {
    if (o.type === 'append' && o.outcome === 'error' && String(o.error).includes('lease')) {
      process.stdout.write(`lease-lost ${o.runId}\n`)
    }
    // After a SIGSTOP/SIGCONT every append that still succeeds is printed (fencing proof).
    if (o.type === 'append' && o.outcome === 'ok' && continued) {
      process.stdout.write(`append-ok ${o.runId}\n`)
    }
    if (o.type === 'lease.lost') process.stdout.write(`renew-lost ${o.runId}\n`)
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
