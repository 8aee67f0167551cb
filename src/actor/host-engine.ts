import type { ResultOptions, StartOptions, StartRunArgs } from '../core/api-types.js'
import { checkArchivedRun } from '../core/archive-check.js'
import type { ArchivedRun, RestoredRun } from '../core/archive-types.js'
import type { Definition } from '../core/definition.js'
import type { EventEnvelope, EventInput, StartResult, TransientEvent } from '../core/envelope.js'
import { InvalidRequestError, RunNotFoundError, SkeinError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import type { MigrateOptions } from '../core/migration-types.js'
import type { Clock, EventStore, Ids, RunSummary } from '../core/ports.js'
import type { Registry } from '../core/registry.js'
import { RT } from '../core/runtime-events.js'
import { normalizeSummaryQuery } from '../core/summaries.js'
import { startKeyRunId } from '../core/uuid.js'
import { bulkAction } from '../runtime/bulk.js'
import { migrateMany } from '../runtime/bulk-migrate.js'
import { describeDefinitions } from '../runtime/definitions.js'
import type { Engine, EngineRuntime, SignalOptions, StartHooks } from '../runtime/engine-types.js'
import type { Cell, CellTable } from './cell-table.js'
import { registrySummaryPage } from './registry-summaries.js'
import type { RunRegistry } from './run-registry.js'

/** An actor host's cells are separate engines: schedules live on an embed engine's store. */
const noSchedule = async (): Promise<never> => {
  throw new SkeinError(
    'NOT_SUPPORTED',
    'an actor host has no schedules (each run is its own cell): run schedules on an engine over a shared store (createEngine({ schedules }))',
  )
}
const noSchedules: Engine['schedules'] = {
  list: noSchedule,
  get: noSchedule,
  create: noSchedule,
  update: noSchedule,
  pause: noSchedule,
  resume: noSchedule,
  delete: noSchedule,
  trigger: noSchedule,
  backfill: noSchedule,
}

/** The 501 of the routes an actor host does not have, saying what to use instead. */
export function notSupported(what: string): SkeinError {
  return new SkeinError(
    'NOT_SUPPORTED',
    `an actor host keeps no store-wide view (${what}): each run is its own cell; serve this from an engine over a shared store (createEngine with sqliteStore or postgresStore)`,
    { instead: 'an engine over a shared store' },
  )
}

export interface HostEngineParts {
  table: CellTable
  registry: RunRegistry
  modules: Registry
  clock: Clock
  ids: Ids
  /** The caller's identity (the authorize hook's) for the request being served, if any. */
  identity(): Json | undefined
  /** `POST /operations/deadlines/rescan` and `recoverDeadlines()`: every known run's deadlines. */
  rescan(): Promise<number>
  fetch(request: Request): Promise<Response | null>
  serve: Engine['serve']
  stop: Engine['stop']
}

/**
 * The engine the HTTP layer serves for an actor host: every call for a run goes to that run's
 * cell (opened if needed, held for the call), a start creates the cell and records the run in
 * the registry first, and the listings walk the registry. So the embed route table serves the
 * actor host unchanged, route for route.
 */
export function hostEngine(p: HostEngineParts): Engine {
  const { table } = p
  const on =
    <A extends unknown[], R>(call: (engine: Engine, runId: string, ...args: A) => Promise<R>) =>
    (runId: string, ...args: A): Promise<R> =>
      table.use(runId, false, (cell) => call(cell.engine, runId, ...args))

  async function startIn(
    args: { kind: string; definitionName: string; definitionVersion?: string } & StartOptions,
    begin: (cell: Cell, runId: string) => Promise<StartResult>,
  ): Promise<StartResult> {
    const runId =
      args.runId ??
      (args.idempotencyKey === undefined ? p.ids.runId() : startKeyRunId(args.idempotencyKey))
    // Recorded before anything is written: a crash after the start still finds the run.
    await p.registry.record({
      runId,
      owner: p.identity() ?? null,
      kind: args.kind,
      definitionName: args.definitionName,
      // A start without a version gets the default one: recorded as such, not left empty.
      definitionVersion:
        args.definitionVersion ??
        p.modules.resolve({ kind: args.kind, name: args.definitionName })?.version ??
        null,
      createdAt: p.clock.now(),
    })
    let cell: Cell
    try {
      cell = await table.acquire(runId, true)
    } catch (error) {
      await p.registry.forget(runId).catch(() => {})
      throw error
    }
    // A refused start (bad input, unknown definition) leaves no cell and no registry entry.
    return withNewCell(cell, runId, () => begin(cell, runId))
  }

  /**
   * `write` into a cell made for `runId` and held: the cell is let go after, and one that a
   * failed `write` left empty is discarded (with its registry entry).
   */
  async function withNewCell<T>(cell: Cell, runId: string, write: () => Promise<T>): Promise<T> {
    let empty = false
    try {
      return await write()
    } catch (error) {
      empty = (await cell.storage.store.tail(runId).catch(() => 1)) === 0
      throw error
    } finally {
      table.release(cell)
      if (empty && cell.refs === 0) await table.discard(runId).catch(() => {})
    }
  }

  /**
   * An archived run into its own cell (docs/data-lifecycle.md, "Restoring"; decisions.md, "An
   * actor host restores a run into a cell it holds, registry entry before the log"): the cell is
   * made and held (its file's lock), the run recorded in the registry (due at once), then the
   * cell's engine writes the log in one transaction. Cut short before the log, the entry is due
   * and its cell empty: the host's next sweep (or boot) forgets both; an empty cell without an
   * entry reads as no run. A refused restore leaves neither.
   */
  async function restoreIn(archived: ArchivedRun): Promise<RestoredRun> {
    const run = checkArchivedRun(archived, `archived run ${String(archived?.runId)}`)
    const { runId } = run
    const named = definitionOf(run)
    const cell = await table.acquire(runId, true)
    return withNewCell(cell, runId, async () => {
      await p.registry.record({
        runId,
        owner: p.identity() ?? null,
        ...named,
        definitionVersion: null,
        createdAt: p.clock.now(),
      })
      const restored = await cell.engine.restoreRun(run)
      const state = await cell.engine.getRun(runId)
      if (state.definitionVersion) await p.registry.setVersion?.(runId, state.definitionVersion)
      return restored
    })
  }

  /** A run's summary as its own cell's store has it (the cell opens for it). */
  const summaryOfCell = async (runId: string): Promise<RunSummary | undefined> => {
    try {
      return await table.use(runId, false, async (cell) => {
        const page = await cell.engine.listRunSummaries({ runIdPrefix: runId, limit: 10 })
        return page.runs.find((run) => run.runId === runId)
      })
    } catch (error) {
      // Registered, but its start wrote nothing (or it was deleted meanwhile): not a run.
      if (RunNotFoundError.is(error)) return undefined
      throw error
    }
  }

  const runtime: EngineRuntime = {
    registry: p.modules,
    idle: async () => {},
  }

  const routed: Omit<Engine, 'projectors'> = {
    ready: Object.assign(async () => ({ store: undefined as unknown as EventStore, runtime }), {
      // biome-ignore lint/suspicious/noThenProperty: the engine's ready is awaitable bare too
      then: (resolve: (v: any) => unknown, reject?: (e: unknown) => unknown) =>
        Promise.resolve({ store: undefined, runtime }).then(resolve, reject),
    }) as unknown as Engine['ready'],
    start: ((definition: Definition, input?: unknown, options: StartOptions = {}) =>
      startIn(
        {
          ...options,
          kind: definition.kind,
          definitionName: definition.name,
          definitionVersion: definition.version,
        },
        (cell, runId) =>
          (cell.engine.start as any)(definition, input, {
            ...options,
            runId,
          }) as Promise<StartResult>,
      )) as Engine['start'],
    startRun: (args: StartRunArgs, hooks?: StartHooks) =>
      startIn(args, (cell, runId) => cell.engine.startRun({ ...args, runId }, hooks)),
    getRun: on((e, runId) => e.getRun(runId)),
    // The wait holds the run's cell open until the run ends, like a subscription.
    result: on((e, runId, options?: ResultOptions) => e.result(runId, options)),
    getEvents: on((e, runId, options?: { fromSeq?: number; limit?: number }) =>
      e.getEvents(runId, options),
    ),
    signal: on((e, runId, events: readonly EventInput[], options?: SignalOptions) =>
      e.signal(runId, events, options),
    ),
    wake: on((e, runId) => e.wake(runId)),
    cancel: on((e, runId, threadId?: string) => e.cancel(runId, threadId)),
    // The registry is the list (docs/operating-runs.md, "Finding runs").
    listRuns: async () => {
      const runIds: string[] = []
      let cursor: string | undefined
      do {
        const page = await p.registry.list({ cursor, limit: 1000 })
        for (const run of page.runs) runIds.push(run.runId)
        cursor = page.nextCursor
      } while (cursor !== undefined)
      return runIds
    },
    queues: async () => {
      throw notSupported('GET /queues')
    },
    // A bulk action starts from the listing, so an actor host refuses it as the listing.
    retryMany: (filter, options) => bulkAction(engine, 'retry', filter, options),
    wakeMany: (filter, options) => bulkAction(engine, 'wake', filter, options),
    cancelMany: (filter, options) => bulkAction(engine, 'cancel', filter, options),
    migrateRuns: (filter, options, caller) => migrateMany(engine, filter, options, caller),
    migrateRun: on(async (e, runId, options: MigrateOptions, caller) => {
      const migration = await e.migrateRun(runId, options, caller)
      // The registry's version filters the listing: it follows the run's.
      if (migration.migrated) await p.registry.setVersion?.(runId, migration.toVersion)
      return migration
    }),
    listRunSummaries: (query) =>
      registrySummaryPage(
        p.registry,
        normalizeSummaryQuery(query, p.modules.attributeTypes),
        summaryOfCell,
      ),
    listDefinitions: async () => describeDefinitions(p.modules),
    versions: async () => {
      throw notSupported('GET /definitions/versions')
    },
    schedules: noSchedules,
    completeWaitUrl: noSchedule,
    project: on((e, runId, projection) => e.project(runId, projection)) as Engine['project'],
    replayTo: on((e, runId, seq: number) => e.replayTo(runId, seq)),
    inspectRun: on((e, runId) => e.inspectRun(runId)),
    listEffects: on((e, runId) => e.listEffects(runId)),
    listThreads: on((e, runId) => e.listThreads(runId)),
    retryEffect: on((e, runId, effectId: string, caller) => e.retryEffect(runId, effectId, caller)),
    requeueEffect: on((e, runId, effectId: string, caller) =>
      e.requeueEffect(runId, effectId, caller),
    ),
    failEffect: on((e, runId, effectId: string, caller) => e.failEffect(runId, effectId, caller)),
    workerCallback: on((e, runId, input) => e.workerCallback(runId, input)),
    // The cell's engine deletes the run's rows; then the cell goes (its file) and its entry.
    deleteRun: async (runId, options) => {
      const deleted = await on((e, id) => e.deleteRun(id, options))(runId)
      await table.discard(runId)
      return deleted
    },
    restoreRun: (archived) => restoreIn(archived),
    // A fork is a new run written whole: no start records it.
    fork: async () => {
      throw new SkeinError(
        'NOT_SUPPORTED',
        'an actor host does not fork runs: fork on an engine over a shared store (sqliteStore, postgresStore)',
      )
    },
    // Each cell is its own engine: runs are deleted one by one (DELETE /runs/:id).
    retention: async () => ({ enabled: false }),
    rescanTimers: () => p.rescan(),
    recoverDeadlines: () => p.rescan(),
    async subscribe(runId: string, listener: (events: readonly EventEnvelope[]) => void) {
      // The subscription holds the cell open until it ends.
      const cell = await table.acquire(runId, false)
      let off: () => void
      try {
        off = await cell.engine.subscribe(runId, listener)
      } catch (error) {
        table.release(cell)
        throw error
      }
      let done = false
      return () => {
        if (done) return
        done = true
        off()
        table.release(cell)
      }
    },
    subscribeTransient(runId: string, listener: (event: TransientEvent) => void) {
      // Streams subscribe to the durable events first, so the cell is open here.
      const cell = table.tryAcquire(runId)
      if (!cell) return () => {}
      const off = cell.engine.subscribeTransient(runId, listener)
      let done = false
      return () => {
        if (done) return
        done = true
        off()
        table.release(cell)
      }
    },
    fetch: (request) => p.fetch(request),
    serve: p.serve,
    stop: p.stop,
    get runtime() {
      return Promise.resolve(runtime)
    },
    get store(): Promise<EventStore> {
      return Promise.reject(notSupported('the store of an actor host'))
    },
  }
  // Post-commit projectors run in no cell yet: the host reports none (where an engine has the
  // method; added beside the literal so the object fits the Engine type with or without it).
  const engine: Engine = Object.assign(routed, { projectors: async () => [] })
  return engine
}

/**
 * The kind and definition an archived run is recorded under: the archive's header (the sweep
 * writes them), else its start event's; an archive with neither cannot be listed, so it is
 * refused before anything is written.
 */
function definitionOf(run: ArchivedRun): { kind: string; definitionName: string } {
  const started = run.events[0]?.type === RT.runStarted ? run.events[0].payload : undefined
  const payload = (started ?? {}) as { kind?: unknown; definitionName?: unknown }
  const kind = run.kind ?? payload.kind
  const definitionName = run.definitionName ?? payload.definitionName
  if (typeof kind !== 'string' || typeof definitionName !== 'string') {
    throw new InvalidRequestError(
      `archived run ${run.runId}: an actor host records a run by its kind and definition name, and the archive has neither in its header nor a readable start event; nothing was restored`,
      { runId: run.runId },
    )
  }
  return { kind, definitionName }
}
