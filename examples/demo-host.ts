// `npm start`: a durable Skein host on a SQLite file. Runs survive restarts: stop it with
// Ctrl-C (or kill -9 it), start it again, and parked runs, timers and retries carry on.
import { mkdirSync } from 'node:fs'
import { resolve } from 'node:path'
import { createEngine } from 'skein'
import { debuggerUi } from 'skein/debugger'
import { sqliteStore } from 'skein/sqlite'
import { demoModules } from './demo-definitions.js'

const dir = resolve(process.env.SKEIN_DIR ?? '.skein')
mkdirSync(dir, { recursive: true })
const path = resolve(dir, 'demo.db')
const store = sqliteStore({ path })
const modules = await demoModules()
const engine = createEngine({ store, modules, debugger: { basePath: '/_skein', ui: debuggerUi() } })
const server = await engine.serve({
  port: Number(process.env.PORT ?? 8787),
  hostname: process.env.HOST ?? '127.0.0.1',
})
const url = server.url
const runs = (await engine.listRuns()).length
const definitions = modules.flatMap((m) => (m.definitions ?? []).map((d) => `${d.kind}:${d.name}`))

console.log(`Debugger: ${url}/_skein/

Skein demo host on ${url}
  store: ${path} (SQLite, synchronous=FULL; ${runs} run(s) already in it)
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

let stopping = false
const shutdown = async (signal: string) => {
  if (stopping) return
  stopping = true
  console.log(`\n${signal}: stopping (runs are kept in ${path})`)
  try {
    await engine.stop()
    await store.close()
  } finally {
    process.exit(0)
  }
}
process.on('SIGINT', () => void shutdown('SIGINT'))
process.on('SIGTERM', () => void shutdown('SIGTERM'))
