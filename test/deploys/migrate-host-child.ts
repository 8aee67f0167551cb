// One host of the migration proof (migrate-hosts.test.ts), spawned with
// `node --conditions=skein-source --import tsx migrate-host-child.ts <storeSpec> <versions json>`:
// an engine on the shared store registering the listed versions of `order`, serving HTTP on
// 127.0.0.1 (prints `port <n>`).
import { createEngine } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { openStoreSpec } from '../durability/store-spec.js'

const [storeSpec, versionsText] = process.argv.slice(2)
const paid = { run: (ctx: any) => ctx.waitFor('shop.paid') }
const all = {
  v1: defineWorkflow({ name: 'order', version: 'v1', nodes: { paid } }),
  // Compatible with v1: `paid` as it was, a node after it.
  v2: defineWorkflow({
    name: 'order',
    version: 'v2',
    nodes: { paid, ship: { after: ['paid'], run: () => ({ shippedBy: 'v2', pid: process.pid }) } },
  }),
  // Incompatible: `paid` runs after a new node.
  v3: defineWorkflow({
    name: 'order',
    version: 'v3',
    nodes: { check: { run: () => 'ok' }, paid: { ...paid, after: ['check'] } },
  }),
}
const versions = JSON.parse(versionsText) as Array<keyof typeof all>
const engine = createEngine({
  store: openStoreSpec(storeSpec),
  modules: [workflow({ definitions: versions.map((v) => all[v]) })],
  ownership: { owner: `host-${process.pid}`, pollMs: 20 },
  authorize: () => true,
})
const server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
console.log(`port ${new URL(server.url).port}`)
process.on('SIGTERM', async () => {
  await server.close()
  await engine.stop()
  process.exit(0)
})
