// `skein actor`: an actor host (one cell per run) over a directory, with a module file's modules.
import { resolve } from 'node:path'
import type { Command } from 'commander'
import { createActorHost, postgresRegistry, sharedCells } from '../actor/index.js'
import { PortInUseError } from '../core/errors.js'
import { approval } from '../modules/approval/index.js'
import { workflow } from '../modules/workflow/index.js'
import { type PostgresStore, postgresStore } from '../stores/postgres/postgres-store.js'
import { addDebuggerOption, debuggerLine, debuggerOf } from './debugger-option.js'
import { CliError, type CliIo, describeError, parseCount } from './io.js'
import { loadModules, STOP_GRACE_MS } from './serve-command.js'
import { tokenAuth } from './token-auth.js'

export const DEFAULT_ACTOR_DIR = '.skein/actor'

interface ActorOptions {
  dir: string
  port: string
  host: string
  maxOpenCells: string
  idleMs: string
  store?: string
  schema: string
  token?: string
  debugger: string | boolean
}

export function registerActorCommand(program: Command, io: CliIo): void {
  const actor = program
    .command('actor')
    .description(
      'serve the HTTP API and the debugger as an actor host: one cell (SQLite file) per run under --dir, runs listed from its run registry',
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
    .option(
      '--store <postgres-url>',
      'cells over one shared Postgres store instead of --dir (several hosts on one schema)',
    )
    .option('--schema <name>', 'the Postgres schema of --store', 'skein')
  addDebuggerOption(actor).action(
    async (modulePath: string | undefined, _o: unknown, command: Command) => {
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
      if (o.store !== undefined && !/^postgres(ql)?:\/\//.test(o.store)) {
        throw new CliError('--store takes a postgres:// (or postgresql://) URL')
      }
      const token = o.token ?? io.env?.SKEIN_TOKEN
      const debuggerHost = debuggerOf(o.debugger)
      let host: ReturnType<typeof createActorHost>
      let store: PostgresStore | undefined
      try {
        store = o.store
          ? postgresStore({ connectionString: o.store }, { schema: o.schema })
          : undefined
        host = createActorHost({
          modules,
          ...(store
            ? { cells: sharedCells({ store }), registry: postgresRegistry({ store }) }
            : { dir }),
          maxOpenCells,
          idleTimeoutMs,
          ...(debuggerHost ? { debugger: debuggerHost } : {}),
          ...tokenAuth(token),
        })
      } catch (error) {
        await store?.close().catch(() => {})
        throw new CliError(
          `cannot open ${o.store ? `schema ${o.schema}` : dir}: ${describeError(error)}`,
        )
      }
      const where = store
        ? `  cells on Postgres schema ${o.schema} (shared: the store's leases make each run's writer)\n  runs listed from the registry ${o.schema}.skein_actor_runs\n`
        : `  cells ${dir}/runs (one SQLite file per run; RECOVERED opened for due deadlines)\n  runs listed from the registry ${dir}/registry.db\n`
      try {
        const server = await host.serve({ port, hostname: o.host })
        const recovered = await host.recovered
        io.stdout.write(
          `skein actor host ${server.url}\n${debuggerLine(server.url, debuggerHost)}${where.replace('RECOVERED', String(recovered))}  modules ${modules.map((m) => m.namespace).join(', ')}\n${token ? '  bearer token required\n' : ''}`,
        )
        io.onListening?.({ url: server.url, db: store ? o.schema : dir })
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
        await store?.close()
      }
    },
  )
}

const untilAborted = (signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (!signal) return // runs until the process is killed
    if (signal.aborted) return resolve()
    signal.addEventListener('abort', () => resolve(), { once: true })
  })
