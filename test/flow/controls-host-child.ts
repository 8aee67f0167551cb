// One engine host on a Postgres schema serving HTTP, with a definition per flow control (the
// flow-control proofs spawn several). argv: <schema>. Prints `READY <url>` once it serves.
import { createEngine } from 'skein'
import { postgresStore } from 'skein/postgres'
import { defineWorkflow, workflow } from 'skein/workflow'

const [schema] = process.argv.slice(2)
const url = process.env.SKEIN_PG_URL
if (!url) throw new Error('controls-host-child needs SKEIN_PG_URL')

type In = { k: string; n: number }
const byK = (input: In) => input.k

/** At most 20 admissions in any second, over every host; each run completes at once. */
const rated = defineWorkflow({
  name: 'rated',
  flow: { rate: { limit: 20, periodMs: 1000 } },
  nodes: { n: { run: (ctx) => ctx.input } },
})
/** Starts of one key within 1.5 s of each other are one run, on the last input. */
const debounced = defineWorkflow({
  name: 'debounced',
  flow: { debounce: { periodMs: 1500, key: byK } },
  nodes: { n: { run: (ctx) => ctx.input } },
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

const store = postgresStore({ connectionString: url }, { schema, maxConnections: 4 })
const engine = createEngine({
  store,
  ownership: {},
  modules: [workflow({ definitions: [rated, debounced, skipper, queuer] })],
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
