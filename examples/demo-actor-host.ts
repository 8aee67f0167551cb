// `SKEIN_ACTOR=1 npm start`: the demo as an actor host. Each run lives in its own cell (one
// SQLite file under .skein/actor/runs/), the run registry in .skein/actor/registry.db; cells
// open on the first request for their run and close when idle. There is no global run listing
// (GET /runs answers 501): list runs from the registry.
import { resolve } from 'node:path'
import { consoleLogger, PortInUseError } from 'skein'
import { createActorHost } from 'skein/actor'
import { debuggerUi } from 'skein/debugger'
import { demoModules } from './demo-definitions.js'

const GRACE_MS = 10_000

export async function serveActorDemo(): Promise<void> {
  const dir = resolve(process.env.SKEIN_DIR ?? '.skein', 'actor')
  const modules = await demoModules()
  const host = createActorHost({
    modules,
    dir,
    debugger: { basePath: '/_skein', ui: debuggerUi() },
    ...(process.env.SKEIN_LOG === 'off' ? {} : { logger: consoleLogger({ level: 'warn' }) }),
  })
  const port = Number(process.env.PORT ?? 8787)
  const hostname = process.env.HOST ?? '127.0.0.1'
  let url: string
  try {
    url = (await host.serve({ port, hostname })).url
  } catch (error) {
    const code = (error as { code?: string })?.code
    const message =
      PortInUseError.is(error) || code === 'EADDRINUSE'
        ? `port ${port} on ${hostname} is already in use: start with PORT=<another port> (PORT=0 picks a free one)`
        : String((error as Error)?.message ?? error)
    process.stderr.write(`demo actor host: ${message}\n`)
    await host.stop()
    process.exit(1)
  }
  const recovered = await host.recovered
  console.log(`Skein demo actor host on ${url}
  cells: ${dir}/runs (one SQLite file per run; ${recovered} opened for due timers)
  registry: ${dir}/registry.db (GET /runs answers 501 on an actor host)

Try it:

  curl -s -X POST ${url}/runs -H 'content-type: application/json' \\
    -d '{"kind":"workflow","definitionName":"nap","input":{"ms":30000},"runId":"nap-1"}'
  curl -s ${url}/runs/nap-1
  curl -s ${url}/runs   # 501 NOT_SUPPORTED: an actor host has no global listing

Ctrl-C stops the host; runs stay in ${dir}.`)

  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) process.exit(1)
    stopping = true
    console.log(`\n${signal}: stopping (cells close, their next deadlines go to the registry)`)
    try {
      await host.stop({ graceMs: GRACE_MS })
    } finally {
      process.exit(0)
    }
  }
  process.on('SIGINT', () => void shutdown('SIGINT'))
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
}
