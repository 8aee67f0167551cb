import { AsyncLocalStorage } from 'node:async_hooks'
import { join } from 'node:path'
import type { Json } from '../core/json.js'
import type { Module } from '../core/module.js'
import type { Clock, Ids } from '../core/ports.js'
import { Registry } from '../core/registry.js'
import { createEngine } from '../create-engine.js'
import type { AuthorizeHook } from '../http/authorize.js'
import { validateApiBasePath, validateDebuggerHost } from '../http/debugger-path.js'
import { createHttpHandler } from '../http/handler.js'
import type { DebuggerHost, HttpOptions } from '../http/http-options.js'
import { checkCancelRoutes } from '../http/routes/cancel.js'
import { serveHandler } from '../http/server.js'
import type { ServeOptions, ServerHandle, StopOptions } from '../runtime/engine-types.js'
import { executableVersions } from '../runtime/fleet-presence.js'
import { engineLogger, type Logger } from '../runtime/logger.js'
import { type RuntimeOptions, resolveOptions } from '../runtime/options.js'
import { Claimer, claimDue } from '../runtime/ownership/claimer.js'
import { defaultIds, systemClock } from '../runtime/system.js'
import { ACTOR_ROUTES } from './actor-routes.js'
import { type CellStore, memoryCells } from './cell-store.js'
import { CellTable } from './cell-table.js'
import { hostEngine } from './host-engine.js'
import { memoryRegistry, type RunRegistry } from './run-registry.js'
import { sqliteCells } from './sqlite-cells.js'
import { sqliteRegistry } from './sqlite-registry.js'

/** What every cell's engine is given besides its run's store and scheduler. */
export type CellEngineOptions = Omit<
  RuntimeOptions,
  'modules' | 'store' | 'scheduler' | 'clock' | 'ids' | 'rescanTimers' | 'logger'
>

export interface ActorHostOptions {
  modules?: readonly Module[]
  /**
   * With `dir`: one SQLite file per run under `<dir>/runs/` (the default cells) and the run
   * registry in `<dir>/registry.db`. Without it, both live in memory.
   */
  dir?: string
  /** Where cells keep their runs (default: `sqliteCells({ dir })`, else `memoryCells()`). */
  cells?: CellStore
  /** Where new runs are recorded (default: `sqliteRegistry` in `dir`, else memory). */
  registry?: RunRegistry
  authorize?: AuthorizeHook
  debugger?: DebuggerHost
  http?: HttpOptions
  /** Open cells at most (least recently used idle ones close first); default 256. */
  maxOpenCells?: number
  /** A cell unused this long closes (default 30 s). */
  idleTimeoutMs?: number
  /** How often idle cells are closed and due ones opened (default 1 s). */
  sweepMs?: number
  /** Options of every cell's engine (limits, snapshots, worker, observer, …). */
  cell?: CellEngineOptions
  clock?: Clock
  ids?: Ids
  logger?: Logger
}

export interface ActorHost {
  /** The Web handler: the embed HTTP contract (`GET /runs` and `/runs/summaries` list the registry). */
  fetch(request: Request): Promise<Response | null>
  serve(options?: ServeOptions): Promise<ServerHandle>
  /** Closes every cell (its next deadline goes to the registry) and the servers. */
  stop(options?: StopOptions): Promise<void>
  /** The run registry (list the host's runs page by page). */
  readonly registry: RunRegistry
  /** Open cells now. */
  openCells(): number
  /** Resolves once the cells due at boot (procedure 4) were opened. */
  readonly recovered: Promise<number>
}

/** Opened this long before a deadline; also how close a deadline keeps a cell open. */
const AHEAD_MS = 2000

/**
 * The actor host (docs/http.md, "Actor host"): each run lives in a cell with exactly
 * one writer, an engine over the run's own storage. Cells open lazily on the first request for
 * their run (load, catch up, schedule the run's deadlines), close when idle and are bounded by
 * `maxOpenCells`. New runs are recorded in the run registry; after a restart the host opens the
 * cells whose deadline is due (or that were open when it stopped) from the registry.
 *
 * @example
 * const host = createActorHost({ modules: [workflow({ definitions: [hello] })], dir: '.skein/actor' })
 * await host.serve({ port: 8787 })
 */
export function createActorHost(options: ActorHostOptions = {}): ActorHost {
  const modules = options.modules ?? []
  const moduleRegistry = new Registry(modules)
  const versions = executableVersions(moduleRegistry)
  const clock = options.clock ?? systemClock
  const ids = options.ids ?? defaultIds()
  const log = engineLogger(options.logger)
  const apiBasePath = validateApiBasePath(options.http?.basePath)
  checkCancelRoutes(options.http?.cancelRoutes)
  if (options.debugger !== undefined) validateDebuggerHost(options.debugger, apiBasePath)
  const limits = resolveOptions({ ...options.cell })
  const cells =
    options.cells ?? (options.dir !== undefined ? sqliteCells({ dir: options.dir }) : memoryCells())
  const registry =
    options.registry ??
    (options.dir !== undefined
      ? sqliteRegistry({ path: join(options.dir, 'registry.db') })
      : memoryRegistry())
  const maxOpenCells = options.maxOpenCells ?? 256
  if (!Number.isInteger(maxOpenCells) || maxOpenCells < 1) {
    throw new TypeError('createActorHost: maxOpenCells must be an integer >= 1')
  }

  const table = new CellTable({
    cells,
    registry,
    clock,
    maxOpenCells,
    idleTimeoutMs: options.idleTimeoutMs ?? 30_000,
    aheadMs: AHEAD_MS,
    closeGraceMs: 5000,
    wakes: cells.claimDue === undefined,
    log,
    makeEngine: (store, scheduler) =>
      createEngine({
        // A cell's file lock already makes its process the run's one writer (decisions.md).
        ownership: false,
        ...options.cell,
        // Cells over a shared store: the store's lease makes the run's single writer.
        ...(cells.ownership ? { ownership: cells.ownership } : {}),
        modules,
        store,
        scheduler,
        clock,
        ids,
        ...(options.logger ? { logger: options.logger } : {}),
      }),
  })

  // The identity the authorize hook gave the request being served (a start records it).
  const caller = new AsyncLocalStorage<{ identity?: Json }>()
  const hook = options.authorize
  const authorize: AuthorizeHook | undefined = hook
    ? async (request, context) => {
        const result = await hook(request, context)
        const slot = caller.getStore()
        if (slot && result !== null && typeof result === 'object' && 'identity' in result) {
          slot.identity = result.identity
        }
        return result
      }
    : undefined

  const servers = new Set<ServerHandle>()
  let stopping: Promise<void> | undefined

  /**
   * Cells over a shared store: takes the runs due now that nobody holds (deadlines of closed
   * cells, runs of a host that died) and opens their cells; a cell open already is woken (its
   * fold may predate what the other host wrote). Returns how many opened.
   */
  const claimCells = async (claim: (now: number, limit: number) => Promise<string[]>) => {
    let opened = 0
    await claimDue(
      {
        claim,
        onClaimed: async (runId: string) => {
          const wasOpen = table.isOpen(runId)
          try {
            await table.use(runId, false, async (cell) => {
              if (wasOpen) await cell.engine.wake(runId)
            })
            opened++
          } catch (error) {
            log.warn({ runId, err: String(error) }, 'actor host: a claimed cell did not open')
          }
        },
        // Idle cells make room (the least recently used closes for a claimed one).
        pageSize: () =>
          table.hasRoom() ? Math.min(32, Math.max(1, maxOpenCells - table.size)) : 0,
        stopped: () => stopping !== undefined,
      },
      clock,
    )
    return opened
  }

  /** Opens (and closes again when idle) the cells due by `at`, as many as there is room for. */
  async function openDue(at: number): Promise<number> {
    // Only the runs of versions this host registers (docs/deploys.md, "A mixed fleet").
    if (cells.claimDue) return claimCells((now, limit) => cells.claimDue!(now, limit, versions))
    let opened = 0
    const due = await registry.dueBy(at, maxOpenCells * 2 + 64)
    for (const { runId } of due) {
      if (stopping) break
      if (table.isOpen(runId)) continue
      if (!table.hasRoom()) break
      try {
        // No waiting for a cell another process holds: that process fires its deadlines.
        const cell = await table.acquire(runId, false, 0)
        // Due, free (no call holds it, no process has its lock) and holding no event: a start
        // or restore cut short before its log. Both its cell and its entry go.
        const empty = cell.refs === 1 && (await cell.storage.store.tail(runId)) === 0
        table.release(cell)
        if (empty && cell.refs === 0) {
          log.warn({ runId }, 'actor host: a cell whose start or restore wrote nothing is removed')
          await table.discard(runId)
          continue
        }
        opened++
      } catch (error) {
        if ((error as { code?: string })?.code === 'LEASE_LOST') {
          log.debug({ runId }, 'actor host: a due cell is open in another process')
          continue
        }
        log.warn({ runId, err: String(error) }, 'actor host: a due cell did not open')
        // A run whose storage is gone (deleted, archived) is not due any more.
        if ((error as { code?: string })?.code === 'RUN_NOT_FOUND')
          await registry.setWake(runId, null)
      }
    }
    return opened
  }

  // Every `sweepMs`: idle cells close, and due ones open (claimed, over a shared store).
  const sweeper = new Claimer({
    clock,
    everyMs: options.sweepMs ?? 1000,
    round: async () => {
      if (stopping) return
      table.closeIdle()
      await openDue(clock.now() + AHEAD_MS)
    },
    onError: (error) => log.error({ err: String(error) }, 'actor host: sweep failed'),
  })

  /** Every known run's cell opened in turn: its deadlines rebuilt from its log. */
  async function rescan(): Promise<number> {
    let scheduled = 0
    let cursor: string | undefined
    do {
      const page = await registry.list({ cursor, limit: 100 })
      for (const run of page.runs) {
        try {
          scheduled += await table.use(run.runId, false, async (cell) => {
            const n = await cell.engine.recoverDeadlines()
            return n
          })
        } catch (error) {
          if ((error as { code?: string })?.code !== 'RUN_NOT_FOUND') throw error
        }
      }
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return scheduled
  }

  const engine = hostEngine({
    table,
    registry,
    modules: moduleRegistry,
    clock,
    ids,
    identity: () => caller.getStore()?.identity,
    rescan,
    fetch: (request) => host.fetch(request),
    serve: (serveOptions) => host.serve(serveOptions),
    stop: (stopOptions) => host.stop(stopOptions),
  })
  const http = createHttpHandler(
    engine,
    {
      authorize,
      debugger: options.debugger,
      basePath: apiBasePath,
      maxRequestBytes: limits.maxRequestBytes,
      maxEventBytes: limits.maxEventBytes,
      sse: options.http?.sse,
      cancelRoutes: options.http?.cancelRoutes,
    },
    ACTOR_ROUTES,
  )

  // Procedure 4: the cells due now, or open when the host last stopped, open at boot.
  const recovered = openDue(clock.now() + AHEAD_MS).finally(() => {
    if (!stopping) sweeper.start()
  })
  recovered.catch((error) => log.error({ err: String(error) }, 'actor host: recovery failed'))

  const host: ActorHost = {
    registry,
    recovered,
    openCells: () => table.size,
    fetch: (request) => caller.run({}, () => http.fetch(request)),
    async serve(serveOptions = {}) {
      const server = await serveHandler((request) => host.fetch(request), {
        ...serveOptions,
        closeStreams: () => http.closeStreams(),
      })
      const handle: ServerHandle = {
        ...server,
        close: async () => {
          servers.delete(handle)
          await server.close()
        },
      }
      servers.add(handle)
      return handle
    },
    stop(stopOptions) {
      stopping ??= (async () => {
        sweeper.stop()
        http.closeStreams()
        await Promise.allSettled([...servers].map((s) => s.close()))
        await recovered.catch(() => 0)
        await table.closeAll(stopOptions?.graceMs)
        await registry.close?.()
        await cells.close?.()
      })()
      return stopping
    },
  }
  return host
}
