// `skein actor`: an actor host (one cell per run) over a directory, with a module file's modules.
import { resolve } from 'node:path'
import type { Command } from 'commander'
import { createActorHost } from '../actor/index.js'
import { PortInUseError } from '../core/errors.js'
import { bearerAuth } from '../http/bearer-auth.js'
import { approval } from '../modules/approval/index.js'
import { workflow } from '../modules/workflow/index.js'
import { CliError, type CliIo, describeError, parseCount } from './io.js'
import { loadModules, STOP_GRACE_MS } from './serve-command.js'

export const DEFAULT_ACTOR_DIR = '.skein/actor'

interface ActorOptions {
  dir: string
  port: string
  host: string
  maxOpenCells: string
  idleMs: string
  token?: string
}

export function registerActorCommand(program: Command, io: CliIo): void {
  program
    .command('actor')
    .description(
      'serve the HTTP API as an actor host: one cell (SQLite file) per run under --dir, a run registry, no global listing',
    )
    .argument('[module]', 'a module file, as for `skein serve`')
    .option(
      '--dir <path>',
      'cell directory (one SQLite file per run, registry.db)',
      DEFAULT_ACTOR_DIR,
    )
    .option('--port <port>', 'port to listen on (0 picks a free one)', '8787')
    .option('--host <host>', 'interface to bind', '127.0.0.1')
    .option('--max-open-cells <n>', 'open cells at most (least recently used close first)', '256')
    .option('--idle-ms <ms>', 'an unused cell closes after this long', '30000')
    .action(async (modulePath: string | undefined, _o: unknown, command: Command) => {
      const o = command.optsWithGlobals<ActorOptions>()
      const cwd = io.cwd ?? process.cwd()
      const port = parseCount('--port', o.port)!
      const maxOpenCells = parseCount('--max-open-cells', o.maxOpenCells)!
      const idleTimeoutMs = parseCount('--idle-ms', o.idleMs)!
      if (maxOpenCells < 1) throw new CliError('--max-open-cells must be at least 1')
      const modules = modulePath
        ? await loadModules(resolve(cwd, modulePath))
        : [workflow(), approval()]
      if (!modulePath) {
        io.stderr.write('no module file given: serving workflow and approval with no definitions\n')
      }
      const dir = resolve(cwd, o.dir)
      const token = o.token ?? io.env?.SKEIN_TOKEN
      let host: ReturnType<typeof createActorHost>
      try {
        host = createActorHost({
          modules,
          dir,
          maxOpenCells,
          idleTimeoutMs,
          ...(token
            ? {
                authorize: bearerAuth({
                  read: token,
                  write: token,
                  worker: token,
                  operations: token,
                }),
              }
            : {}),
        })
      } catch (error) {
        throw new CliError(`cannot open ${dir}: ${describeError(error)}`)
      }
      try {
        const server = await host.serve({ port, hostname: o.host })
        const recovered = await host.recovered
        io.stdout.write(
          `skein actor host ${server.url}\n  cells ${dir}/runs (one SQLite file per run; ${recovered} opened for due deadlines)\n  modules ${modules.map((m) => m.namespace).join(', ')}\n  GET /runs and /runs/summaries answer 501: list runs from ${dir}/registry.db\n${token ? '  bearer token required\n' : ''}`,
        )
        io.onListening?.({ url: server.url, db: dir })
        await untilAborted(io.signal)
        io.stdout.write(`stopping (in-flight effects get up to ${STOP_GRACE_MS / 1000} s)\n`)
      } catch (error) {
        if (PortInUseError.is(error) || (error as { code?: string })?.code === 'EADDRINUSE') {
          throw new CliError(
            `port ${port} on ${o.host} is already in use: stop the process that holds it, or pass --port <another port> (0 picks a free one)`,
          )
        }
        throw new CliError(`actor host failed: ${describeError(error)}`)
      } finally {
        await host.stop({ graceMs: STOP_GRACE_MS })
      }
    })
}

const untilAborted = (signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (!signal) return // runs until the process is killed
    if (signal.aborted) return resolve()
    signal.addEventListener('abort', () => resolve(), { once: true })
  })
