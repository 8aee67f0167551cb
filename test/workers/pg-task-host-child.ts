// One engine host on a Postgres schema with an httpWorkerQueue, serving HTTP (the worker task
// proof spawns three). argv: <schema>. Prints `READY <url>` once it serves.
import { bearerAuth, createEngine, defineEffect, defineModule, httpWorkerQueue } from 'skein'
import { postgresStore } from 'skein/postgres'
import { defineWorkflow, workflow } from 'skein/workflow'

const [schema] = process.argv.slice(2)
const url = process.env.SKEIN_PG_URL
if (!url) throw new Error('pg-task-host-child needs SKEIN_PG_URL')

const work = defineModule({
  namespace: 'pt',
  effects: {
    // A handed-out task lost with a killed host (taken, not yet answered) times out and is
    // dispatched again as a new attempt; never the same attempt twice. So does an attempt whose
    // task the killed host never stored (killed between its `dispatched` commit and the task's
    // write): schedule-to-start, as docs/workers.md ("Restarts") tells every worker effect to set.
    work: defineEffect({
      execution: 'worker',
      scheduleToStartMs: 10_000,
      startToCloseMs: 4_000,
      retry: { maxAttempts: 10, backoffMs: 50 },
    }),
  },
})
const job = defineWorkflow({
  name: 'job',
  nodes: {
    work: { run: (ctx) => ctx.invoke('pt.work', { n: 1 }) },
    done: { after: ['work'], run: ({ results }) => ({ got: results.work }) },
  },
})

const store = postgresStore(
  { connectionString: url },
  { schema, maxConnections: 6, pollIntervalMs: 250 },
)
const engine = createEngine({
  store,
  modules: [workflow({ definitions: [job] }), work],
  worker: httpWorkerQueue({ claimTtlMs: 2_000, pollMs: 500 }),
  authorize: bearerAuth({ worker: 'proof-worker', write: 'proof-write' }),
  ownership: {},
})
await engine.ready()
const server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
process.stdout.write(`READY ${server.url}\n`)
process.on('SIGTERM', () => {
  engine
    .stop({ graceMs: 500 })
    .then(() => store.close())
    .finally(() => process.exit(0))
})
