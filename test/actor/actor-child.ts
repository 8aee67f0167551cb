// An actor host in its own process, for the kill and two-process proofs: serves on 127.0.0.1
// (a free port) over `dir`, prints `ready <url>`, stops cleanly on SIGTERM (prints `stopped`).
// Spawned with `--conditions=skein-source --import tsx`.
import { consoleLogger } from 'skein'
import { createActorHost, sqliteCells } from 'skein/actor'
import { actorModules } from './actor-workload.js'

const [dir, idleText, lockWaitText] = process.argv.slice(2)
const host = createActorHost({
  modules: actorModules(),
  dir,
  cells: sqliteCells({ dir, lockWaitMs: Number(lockWaitText ?? 1000) }),
  idleTimeoutMs: Number(idleText ?? 1000),
  sweepMs: 200,
  // Warnings and errors (a cell that did not open, a failed close) on stderr.
  logger: consoleLogger({
    level: 'warn',
    format: 'json',
    write: (line) => process.stderr.write(line),
  }),
})
const server = await host.serve({ port: 0, hostname: '127.0.0.1' })
const recovered = await host.recovered
process.stdout.write(`ready ${server.url} recovered=${recovered}\n`)
process.on('SIGTERM', () => {
  host.stop().then(
    () => {
      process.stdout.write('stopped\n')
      process.exit(0)
    },
    (error) => {
      process.stderr.write(`stop failed: ${error}\n`)
      process.exit(1)
    },
  )
})
