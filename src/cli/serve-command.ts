// `skein serve`: a durable host on a SQLite file, with the modules of a user's module file.
import { existsSync } from 'node:fs'
import { extname, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Command } from 'commander'
import { PortInUseError } from '../core/errors.js'
import type { Module } from '../core/module.js'
import type { ProjectorDefinition } from '../core/projector.js'
import { createEngine } from '../create-engine.js'
import { approval } from '../modules/approval/index.js'
import { workflow } from '../modules/workflow/index.js'
import { consoleLogger } from '../runtime/console-logger.js'
import { isLogLevel, type Logger } from '../runtime/logger.js'
import { sqliteStore } from '../stores/sqlite/sqlite-store.js'
import { addDebuggerOption, debuggerLine, debuggerOf } from './debugger-option.js'
import { CliError, type CliIo, describeError, parseCount } from './io.js'
import { tokenAuth } from './token-auth.js'

export const DEFAULT_DB = '.skein/skein.db'

/** How long a stopping server lets in-flight effects finish before it aborts them. */
export const STOP_GRACE_MS = 10_000

interface ServeOptions {
  db: string
  port: string
  host: string
  synchronous: string
  token?: string
  log: string
  logFormat: string
  cancelRoutes?: boolean
  debugger: string | boolean
}

export function registerServeCommand(program: Command, io: CliIo): void {
  const serve = program
    .command('serve')
    .description('serve the HTTP API over a SQLite store, with the modules of a module file')
    .argument(
      '[module]',
      'a module file exporting `modules` (an array) or a default export (an array, a module, or a function returning them), and optionally `projectors` (an array)',
    )
    .option('--db <path>', 'SQLite database file (created if missing)', DEFAULT_DB)
    .option('--port <port>', 'port to listen on (0 picks a free one)', '8787')
    .option('--host <host>', 'interface to bind', '127.0.0.1')
    .option(
      '--synchronous <mode>',
      "'full' (default) or 'normal' (may lose the last commits on power loss)",
      'full',
    )
    .option('--log <level>', 'debug, info, warn, error, or off', 'info')
    .option('--log-format <format>', "'pretty' or 'json' (JSON lines)", 'pretty')
    .option(
      '--cancel-routes',
      'serve the cancel routes (`skein cancel`; operations access, so it needs --token)',
    )
  addDebuggerOption(serve).action(
    async (modulePath: string | undefined, _o: unknown, command: Command) => {
      const o = command.optsWithGlobals<ServeOptions>()
      const cwd = io.cwd ?? process.cwd()
      const port = parseCount('--port', o.port)!
      if (o.synchronous !== 'full' && o.synchronous !== 'normal') {
        throw new CliError(`--synchronous must be 'full' or 'normal', got "${o.synchronous}"`)
      }
      const token = o.token ?? io.env?.SKEIN_TOKEN
      if (o.cancelRoutes && !token) {
        throw new CliError(
          '--cancel-routes needs --token (or SKEIN_TOKEN): cancelling is an operations route, off without a token',
        )
      }
      const logger = serveLogger(o, io)
      const debuggerHost = debuggerOf(o.debugger)
      const modules = modulePath
        ? await loadModules(resolve(cwd, modulePath))
        : [workflow(), approval()]
      if (!modulePath) {
        io.stderr.write('no module file given: serving workflow and approval with no definitions\n')
      }
      const projectors = modulePath ? await loadProjectors(resolve(cwd, modulePath)) : []
      const db = o.db === ':memory:' ? o.db : resolve(cwd, o.db)
      let store: ReturnType<typeof sqliteStore>
      try {
        store = sqliteStore({ path: db, synchronous: o.synchronous })
      } catch (error) {
        throw new CliError(`cannot open ${db}: ${describeError(error)}`)
      }
      const engine = createEngine({
        store,
        modules,
        projectors,
        ...(logger ? { logger } : {}),
        ...(o.cancelRoutes ? { http: { cancelRoutes: true } } : {}),
        ...(debuggerHost ? { debugger: debuggerHost } : {}),
        ...tokenAuth(token),
      })
      try {
        const server = await engine.serve({ port, hostname: o.host })
        const runs = (await engine.listRuns()).length
        io.stdout.write(
          `skein serving ${server.url}\n${debuggerLine(server.url, debuggerHost)}  store ${db} (${runs} run(s))\n  modules ${modules.map((m) => m.namespace).join(', ')}\n${token ? '  bearer token required\n' : ''}`,
        )
        io.onListening?.({ url: server.url, db })
        await untilAborted(io.signal)
        io.stdout.write(`stopping (in-flight effects get up to ${STOP_GRACE_MS / 1000} s)\n`)
      } catch (error) {
        if (PortInUseError.is(error)) {
          throw new CliError(
            `port ${port} on ${o.host} is already in use: stop the process that holds it, or pass --port <another port> (0 picks a free one)`,
          )
        }
        throw new CliError(`serve failed: ${describeError(error)}`)
      } finally {
        await engine.stop({ graceMs: STOP_GRACE_MS })
        await store.close()
      }
    },
  )
}

/** The `--log` and `--log-format` options as a logger (none for `--log off`). */
function serveLogger(o: ServeOptions, io: CliIo): Logger | undefined {
  if (o.log === 'off') return undefined
  if (!isLogLevel(o.log)) {
    throw new CliError(`--log must be debug, info, warn, error or off, got "${o.log}"`)
  }
  if (o.logFormat !== 'pretty' && o.logFormat !== 'json') {
    throw new CliError(`--log-format must be 'pretty' or 'json', got "${o.logFormat}"`)
  }
  return consoleLogger({
    level: o.log,
    format: o.logFormat,
    write: (line) => io.stdout.write(line),
  })
}

const untilAborted = (signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (!signal) return // runs until the process is killed
    if (signal.aborted) return resolve()
    signal.addEventListener('abort', () => resolve(), { once: true })
  })

const isModule = (value: unknown): value is Module =>
  typeof value === 'object' && value !== null && (value as Module).kindOf === 'module'

/** The projectors a module file exports as `projectors` (an array), if any. */
export async function loadProjectors(path: string): Promise<ProjectorDefinition[]> {
  const exported: Record<string, unknown> = await import(pathToFileURL(path).href)
  const list = exported.projectors ?? []
  const valid =
    Array.isArray(list) &&
    list.every((p) => typeof p?.name === 'string' && typeof p?.handle === 'function')
  if (!valid) {
    throw new CliError(
      `${path} exports \`projectors\` that are not an array of defineProjector(...)`,
    )
  }
  return list
}

/** The extensions Node (with a TypeScript loader for the last three) imports as modules. */
const MODULE_EXTENSIONS = ['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts']

/** A module path that exists and names a module by its extension (else import's own error is obscure). */
function checkModuleFile(path: string): void {
  if (!existsSync(path)) throw new CliError(`cannot load ${path}: no such file`)
  if (!MODULE_EXTENSIONS.includes(extname(path))) {
    throw new CliError(`cannot load ${path}: not a module file (${MODULE_EXTENSIONS.join(', ')})`)
  }
}

/** Imports a module file and returns the modules it exports (see the `serve` help). */
export async function loadModules(path: string): Promise<Module[]> {
  checkModuleFile(path)
  let exported: Record<string, unknown>
  try {
    exported = await import(pathToFileURL(path).href)
  } catch (error) {
    throw new CliError(`cannot load ${path}: ${describeError(error)}`)
  }
  let value = exported.modules ?? exported.default
  if (typeof value === 'function') value = await value()
  const list = isModule(value) ? [value] : value
  if (!Array.isArray(list) || list.length === 0 || !list.every(isModule)) {
    throw new CliError(
      `${path} exports no modules: export \`modules\` (an array of modules) or a default export`,
    )
  }
  return list
}
