// One engine host on a Postgres schema with schedules (the schedule proofs spawn three).
// argv: <schema> <host-name>. SCHED_ENGINE_OPTIONS (JSON): `schedules` as JSON options (their
// start names the workflows below) and `scheduleOptions`. Prints `READY <url>` once it serves.
import { createEngine, defineSchedule, type ScheduleOptions } from 'skein'
import { postgresStore } from 'skein/postgres'
import { defineWorkflow, workflow } from 'skein/workflow'

const [schema, hostName] = process.argv.slice(2)
const url = process.env.SKEIN_PG_URL
if (!url) throw new Error('schedule-host-child needs SKEIN_PG_URL')

/** Completes at once, recording which host ran it. */
const tick = defineWorkflow({
  name: 'tick',
  nodes: { go: { run: () => ({ host: hostName }) } },
})
/** Runs for `ms` (a durable timer), so ticks overlap it. */
const slow = defineWorkflow({
  name: 'slow',
  nodes: { hold: { run: (ctx) => ctx.sleep((ctx.input as { ms?: number })?.ms ?? 2500) } },
})

const options = JSON.parse(process.env.SCHED_ENGINE_OPTIONS || '{}') as {
  schedules?: ScheduleOptions[]
  scheduleOptions?: Record<string, number>
}
const store = postgresStore(
  { connectionString: url },
  { schema, maxConnections: 4, pollIntervalMs: 250 },
)
const engine = createEngine({
  store,
  modules: [workflow({ definitions: [tick, slow] })],
  ownership: {},
  // Test hosts: every route open (the proofs change schedules over HTTP).
  authorize: () => true,
  schedules: (options.schedules ?? []).map((s) => defineSchedule(s)),
  scheduleOptions: options.scheduleOptions ?? {},
})
await engine.ready()
const server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
process.stdout.write(`READY ${server.url}\n`)

process.on('SIGTERM', () => {
  void engine
    .stop({ graceMs: 500 })
    .then(() => store.close())
    .finally(() => process.exit(0))
})
