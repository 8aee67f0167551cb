// `npm start`: a durable Skein host on a SQLite file. Runs survive restarts: stop it with
// Ctrl-C (or kill -9 it), start it again, and parked runs, timers and retries carry on.
// With SKEIN_STORE=postgres://… it runs on Postgres instead (schema SKEIN_SCHEMA, default
// `skein`), and several hosts on one database share the runs (README: "Several hosts on one
// Postgres").
import { mkdirSync } from 'node:fs'
import { resolve } from 'node:path'
import {
  consoleLogger,
  createEngine,
  type EventStore,
  type LogFn,
  type Logger,
  PortInUseError,
} from 'skein'
import { debuggerUi } from 'skein/debugger'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { demoModules } from './demo-definitions.js'

// SKEIN_ACTOR=1 npm start: the same demo as an actor host (examples/demo-actor-host.ts).
if (process.env.SKEIN_ACTOR === '1') {
  const { serveActorDemo } = await import('./demo-actor-host.js')
  await serveActorDemo()
  // The host serves until Ctrl-C (its handler exits the process).
  await new Promise(() => {})
}

/** How long Ctrl-C lets in-flight effects finish before they are aborted (a second one quits). */
const GRACE_MS = 10_000

const storeUrl = process.env.SKEIN_STORE ?? ''
const onPostgres = /^postgres(ql)?:\/\//.test(storeUrl)
if (storeUrl !== '' && !onPostgres) {
  process.stderr.write(
    `demo host: SKEIN_STORE must be a postgres:// URL (unset: SQLite under SKEIN_DIR); got ${storeUrl.split(':')[0]}:…\n`,
  )
  process.exit(1)
}
let store: EventStore
/** Where the runs are, as printed (a URL without its password). */
let path: string
let storeLine: string
if (onPostgres) {
  const schema = process.env.SKEIN_SCHEMA ?? 'skein'
  const url = new URL(storeUrl)
  if (url.password) url.password = '***'
  const pg = postgresStore({ connectionString: storeUrl }, { schema })
  store = pg
  path = `${url.href} (schema ${schema})`
  storeLine = `${path} (Postgres`
} else {
  const dir = resolve(process.env.SKEIN_DIR ?? '.skein')
  mkdirSync(dir, { recursive: true })
  path = resolve(dir, 'demo.db')
  store = sqliteStore({ path })
  storeLine = `${path} (SQLite, synchronous=FULL`
}
const modules = await demoModules()
// Logs (boot and recovery, failed runs and attempts, wake failures, stop): pretty lines on
// stdout; SKEIN_LOG=json for JSON lines, SKEIN_LOG=off for none.
const logFormat = process.env.SKEIN_LOG ?? 'pretty'
const console_ =
  logFormat === 'off'
    ? undefined
    : consoleLogger({ format: logFormat === 'json' ? 'json' : 'pretty' })
// The debugger's URL is the first line printed: log lines (the boot's) wait until it is out.
const held: Array<() => void> = []
let holding = true
const releaseLogs = () => {
  holding = false
  for (const line of held.splice(0)) line()
}
const holdUntilReady =
  (log: Logger, level: keyof Logger): LogFn =>
  (obj, msg) => {
    const line = () => log[level](obj, msg)
    if (holding) held.push(line)
    else line()
  }
const logger: Logger | undefined = console_ && {
  debug: holdUntilReady(console_, 'debug'),
  info: holdUntilReady(console_, 'info'),
  warn: holdUntilReady(console_, 'warn'),
  error: holdUntilReady(console_, 'error'),
}
const engine = createEngine({
  store,
  modules,
  debugger: { basePath: '/_skein', ui: debuggerUi() },
  ...(logger ? { logger } : {}),
})
const port = Number(process.env.PORT ?? 8787)
const hostname = process.env.HOST ?? '127.0.0.1'
let server: Awaited<ReturnType<typeof engine.serve>>
try {
  server = await engine.serve({ port, hostname })
} catch (error) {
  const message = PortInUseError.is(error)
    ? `port ${port} on ${hostname} is already in use: stop the process that holds it, or start with PORT=<another port> npm start (PORT=0 picks a free one)`
    : String((error as Error)?.message ?? error)
  releaseLogs()
  process.stderr.write(`demo host: ${message}\n`)
  await engine.stop()
  await store.close?.()
  process.exit(1)
}
const url = server.url
const runs = (await engine.listRuns()).length
const definitions = modules.flatMap((m) => (m.definitions ?? []).map((d) => `${d.kind}:${d.name}`))

console.log(`Debugger: ${url}/_skein/

Skein demo host on ${url}
  store: ${storeLine}; ${runs} run(s) already in it)
  definitions: ${definitions.join(', ')}
  (review parks on a gate, nap sleeps, retried calls an effect that fails twice)

Try it (or use the CLI: npm run skein -- --help):

  # start a run that parks on an approval gate
  curl -s -X POST ${url}/runs -H 'content-type: application/json' \\
    -d '{"kind":"workflow","definitionName":"review","input":{"topic":"durability"},"runId":"review-1"}'

  # list runs, read one, read its events (the approval id is in approval.requested)
  curl -s ${url}/runs/summaries
  curl -s ${url}/runs/review-1
  curl -s ${url}/runs/review-1/events
  curl -s ${url}/runs/review-1/projections/pendingApprovals

  # approve it (approvalId from pendingApprovals), then watch it complete
  curl -s -X POST ${url}/runs/review-1/events -H 'content-type: application/json' \\
    -d '{"events":[{"type":"approval.decided","payload":{"approvalId":"<approvalId>","outcome":"approve"}}]}'

  # a durable sleep, and an effect that fails twice before it succeeds
  curl -s -X POST ${url}/runs -H 'content-type: application/json' -d '{"kind":"workflow","definitionName":"nap","input":{"ms":30000}}'
  curl -s -X POST ${url}/runs -H 'content-type: application/json' -d '{"kind":"workflow","definitionName":"retried"}'

  # live events (SSE)
  curl -sN ${url}/runs/review-1/events?live=true

Ctrl-C stops the host; runs stay in ${path}.`)
releaseLogs()

let stopping = false
const shutdown = async (signal: string) => {
  if (stopping) {
    console.log(`${signal} again: quitting now (in-flight attempts run again on the next start)`)
    process.exit(1)
  }
  stopping = true
  console.log(
    `\n${signal}: stopping, in-flight effects get up to ${GRACE_MS / 1000} s (runs are kept in ${path})`,
  )
  try {
    await engine.stop({ graceMs: GRACE_MS })
    await store.close?.()
  } finally {
    process.exit(0)
  }
}
process.on('SIGINT', () => void shutdown('SIGINT'))
process.on('SIGTERM', () => void shutdown('SIGTERM'))
