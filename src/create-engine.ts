import type { ResultOptions, StartOptions, StartRunArgs } from './core/api-types.js'
import { withProps } from './core/copy.js'
import { type Definition, type DefinitionList, splitResultArgs } from './core/definition.js'
import type { EventEnvelope, EventInput, StartResult, TransientEvent } from './core/envelope.js'
import { EngineStoppedError } from './core/errors.js'
import type { MigrateManyOptions, MigrateOptions } from './core/migration-types.js'
import type { EventStore, SnapshotStore, SummaryQuery, WorkerCallbackInput } from './core/ports.js'
import type { ProjectionDefinition } from './core/projection.js'
import { Registry } from './core/registry.js'
import { type Booted, EngineLifecycle } from './engine-lifecycle.js'
import type { EngineOptions } from './engine-options.js'
import { validateApiBasePath, validateDebuggerHost } from './http/debugger-path.js'
import { errorResponse } from './http/error-response.js'
import type { HttpHandler } from './http/handler.js'
import { markApiBasePath } from './http/node-middleware.js'
import { checkCancelRoutes } from './http/routes/cancel.js'
import { resolveSseLimits } from './http/sse-limits.js'
import { TerminalWaits } from './runtime/await-terminal.js'
import { type BulkOptions, bulkAction, type RunFilter } from './runtime/bulk.js'
import { migrateMany } from './runtime/bulk-migrate.js'
import { Causes } from './runtime/causes.js'
import { codecSnapshots, codecStore } from './runtime/codec-store.js'
import type { EngineContext } from './runtime/context.js'
import { describeDefinitions } from './runtime/definitions.js'
import { EffectLimits } from './runtime/effect-limits.js'
import { RuntimeEngine } from './runtime/engine.js'
import {
  type EngineSchedules,
  resolveTickerOptions,
  startSchedules,
} from './runtime/engine-schedules.js'
import type {
  CallerContext,
  Engine,
  EngineReady,
  EngineRuntime,
  ReadyFunction,
  ServeOptions,
  ServerHandle,
  SignalOptions,
  StartHooks,
  StopOptions,
} from './runtime/engine-types.js'
import { Fingerprints } from './runtime/fingerprint.js'
import { FlowAdmission } from './runtime/flow-admission.js'
import { holdProcessDuringCalls } from './runtime/keep-alive.js'
import { localScheduler } from './runtime/local-scheduler.js'
import { engineLogger } from './runtime/logger.js'
import type { Observation } from './runtime/options.js'
import { type ResolvedTrim, resolveOptions } from './runtime/options.js'
import { ClaimedTasks } from './runtime/ownership/claimed-task.js'
import { resolveOwnership } from './runtime/ownership/ownership.js'
import { ProjectorRunner } from './runtime/projectors.js'
import { RetentionSweeper, resolveRetention } from './runtime/retention.js'
import { checkStore } from './runtime/store-check.js'
import { defaultIds, defaultOwner, ownerGone, systemClock } from './runtime/system.js'
import { runOf } from './runtime/typed-reads.js'
import { versionReport } from './runtime/versions.js'
import { resolveWaitUrlConfig } from './runtime/wait-urls.js'
import { lookAtWorkerAttempts } from './runtime/worker-task-restore.js'
import { memorySchedules, memoryWaitUrls } from './stores/memory/memory-schedules.js'
import { memorySnapshotStore } from './stores/memory/memory-snapshot-store.js'
import { memoryStore } from './stores/memory/memory-store.js'
import { memoryWorkerTasks } from './stores/memory/memory-worker-tasks.js'
import { isClaimable } from './workers/worker-queue.js'

/**
 * Creates a Skein engine: the embed API, a Web `fetch` handler and an optional Node server.
 * Nothing is installed by default; the store is in memory unless you pass one.
 *
 * @example
 * const engine = createEngine({ modules: [workflow({ definitions: [hello] })] })
 * const { runId, state } = await engine.start(hello, { name: 'Ada' })
 * // Told of its definitions (a type only), `signal` checks the payloads they declare:
 * const typed = createEngine<[typeof hello]>({ modules: [workflow({ definitions: [hello] })] })
 */
export function createEngine<Defs extends DefinitionList = DefinitionList>(
  options: EngineOptions = {},
): Engine<Defs> {
  const resolved = resolveOptions(options)
  const registry = new Registry(options.modules ?? [])
  registry.foldProjections = options.trimAfterSnapshot !== undefined
  const apiBasePath = validateApiBasePath(options.http?.basePath)
  if (options.debugger !== undefined) validateDebuggerHost(options.debugger, apiBasePath)
  // Checked now, not at the first request: a bad bound is a mistake in the caller's code.
  resolveSseLimits(options.http?.sse)
  checkCancelRoutes(options.http?.cancelRoutes)
  resolveTickerOptions(options.scheduleOptions)
  const waitUrlConfig = resolveWaitUrlConfig(options.waitUrls)
  const retention = resolveRetention(options.retention)
  const clock = options.clock ?? systemClock
  const scheduler = options.scheduler ?? localScheduler()
  const observer = options.observer
  const sink = observer
    ? typeof observer === 'function'
      ? observer
      : (o: Observation) => observer.observe(o)
    : undefined
  const observe = sink
    ? (observation: Omit<Observation, 'at'>) => {
        try {
          const result: any = sink(withProps(observation, { at: clock.now() }) as Observation)
          if (result && typeof result.then === 'function') result.then(undefined, () => {})
        } catch {
          // An observer never affects a run.
        }
      }
    : () => {}

  // Only for an observer that asks (otelObserver): on Node 20 an AsyncLocalStorage in use
  // slows every promise in the process.
  const causes =
    observer && typeof observer === 'object' && observer.traceCauses ? new Causes() : undefined

  const log = engineLogger(options.logger)
  const fingerprints = new Fingerprints()
  let http: HttpHandler | undefined

  const boot = async (): Promise<Booted> => {
    const stored = await resolveStore(options.store)
    const codec = options.codec
    const store = codec ? codecStore(stored, codec) : stored
    const capabilities = checkStore(store, {
      projectors: projectorList.length,
      ownership: options.ownership !== undefined && options.ownership !== false,
      trim: options.trimAfterSnapshot !== undefined,
    })
    const snapshots: SnapshotStore =
      (options.snapshotStore &&
        (codec ? codecSnapshots(options.snapshotStore, codec) : options.snapshotStore)) ??
      store.snapshots ??
      memorySnapshotStore()
    const ownership = resolveOwnership(options.ownership, store.leases, {
      owner: defaultOwner,
      isGone: ownerGone,
    })
    const owner = ownership?.owner ?? defaultOwner()
    const tasks = new ClaimedTasks({ clock, claims: store.claims, owner, log })
    const projectors = projectorRunner(store, tasks)
    const worker = isClaimable(options.worker)
      ? options.worker.bind({ tasks: store.workerTasks ?? memoryWorkerTasks(), clock, owner })
      : options.worker
    const ctx: EngineContext = {
      registry,
      ids: options.ids ?? defaultIds(),
      clock,
      options: resolved,
      store,
      capabilities,
      snapshots,
      snapshotsInStore: !options.snapshotStore && capabilities.snapshots,
      codec,
      scheduler,
      worker,
      restoreTasks:
        isClaimable(worker) && store.workerTasks?.shared
          ? (list) => worker.restore(list)
          : undefined,
      trim: resolveTrim(options.trimAfterSnapshot, projectors),
      observing: sink !== undefined,
      observe,
      causes,
      log,
      fingerprints,
      requestDrive: (runId) => lifecycle.runtime?.requestDrive(runId),
      publishTransient: (event) => lifecycle.runtime?.publishTransient(event),
      waitUrls: { ...waitUrlConfig, store: store.waitUrls ?? memoryWaitUrls() },
      ownership,
      tasks,
    }
    const rt = new RuntimeEngine(ctx)
    ctx.flow = FlowAdmission.create(
      ctx,
      (runId) => rt.requestDrive(runId),
      (args) => rt.startRun(args),
    )
    ctx.effectLimits = EffectLimits.create(ctx)
    scheduler.start((runId) => rt.wakeDue(runId).catch(() => undefined), clock)
    await rt.startClaiming()
    const recovered = resolved.rescanTimers ? await rt.recoverOnBoot() : undefined
    log.info(
      recovered ?? { rescanTimers: false },
      recovered
        ? `engine ready: ${recovered.scheduled} run(s) with pending deadlines scheduled, ${recovered.dueNow} due now`
        : 'engine ready (rescanTimers off: no deadlines scheduled)',
    )
    await warnOfDrift(ctx)
    // In the background: reading the running runs must not hold up the boot.
    if (ctx.worker) {
      const list = (query: SummaryQuery) => rt.listRunSummaries(query)
      const read = (runId: string) => rt.readFold(runId)
      // Restoring lost tasks is boot recovery, as the deadlines above: an engine with
      // rescanTimers off writes nothing.
      const restore =
        resolved.rescanTimers && ctx.restoreTasks
          ? (runId: string) => rt.restoreWorkerTasks(runId)
          : undefined
      lookAtWorkerAttempts(ctx, list, read, restore).catch((error) =>
        log.warn({ error: String(error) }, 'looking at worker attempts at boot failed'),
      )
    }
    projectors.start()
    const sweeper = retention
      ? new RetentionSweeper(ctx, retention, (runId) => rt.forgetDeleted(runId))
      : undefined
    sweeper?.start(store)
    await ctx.flow?.boot()
    const schedules = await startSchedules(
      ctx,
      store.schedules ?? memorySchedules(),
      rt,
      options.schedules ?? [],
      options.scheduleOptions,
      owner,
    )
    return { store, runtime: rt, projectors, schedules, retention: sweeper }
  }
  // A loud line at boot when runs in the store wait on versions this host lacks (docs/deploys.md).
  const warnOfDrift = async (ctx: EngineContext) => {
    const report = await versionReport(ctx, fingerprints)
    const missing = report.versions.filter((v) => !v.registered)
    if (missing.length === 0) return
    const list = missing.map((v) => `${v.kind}:${v.name}@${v.version} (${v.activeRuns})`)
    const stranded = missing.filter((v) => !v.live).map((v) => `${v.kind}:${v.name}@${v.version}`)
    log.warn(
      {
        unexecutableRuns: report.unexecutableRuns,
        strandedRuns: report.strandedRuns,
        versions: list,
      },
      `${report.unexecutableRuns} run(s) not yet finished are on definition versions this host does not register: ${list.join(', ')}; a host that registers them executes them${stranded.length > 0 ? `. STRANDED (${report.strandedRuns} run(s)): no live host registers ${stranded.join(', ')}; those runs wait until a host that registers them starts` : ''}`,
    )
  }
  const projectorList = [
    ...(options.projectors ?? []),
    ...(options.modules ?? []).flatMap((m) => m.projectors ?? []),
  ]
  const projectorRunner = (store: EventStore, tasks: ClaimedTasks): ProjectorRunner =>
    new ProjectorRunner(
      projectorList,
      {
        // checkStore refused projectors on a store without a feed.
        feed: store.feed ?? (undefined as never),
        claims: store.claims,
        tasks,
        clock,
        observe,
        observing: sink !== undefined,
        owner: options.projectorOptions?.owner ?? `engine-${crypto.randomUUID()}`,
        codec: options.codec,
      },
      options.projectorOptions,
    )
  const lifecycle: EngineLifecycle = new EngineLifecycle({
    boot,
    log,
    observe,
    closeStreams: () => http?.closeStreams(),
  })

  const rt = () => lifecycle.call()
  // The HTTP handler and its routes are imported at the first request: an engine used only
  // embedded (most hosts, and every restart that recovers runs) never loads them.
  let loadingHttp: Promise<HttpHandler> | undefined
  const handler = (): Promise<HttpHandler> =>
    (loadingHttp ??= import('./http/handler.js').then(({ createHttpHandler }) => {
      http = createHttpHandler(engine, {
        authorize: options.authorize,
        debugger: options.debugger,
        basePath: apiBasePath,
        maxRequestBytes: resolved.maxRequestBytes,
        maxEventBytes: resolved.maxEventBytes,
        sse: options.http?.sse,
        cancelRoutes: options.http?.cancelRoutes,
        observing: sink ? { observe, causes } : undefined,
      })
      return http
    }))

  // The `serve` option's server: `ready()` resolves once it listens and rejects if it cannot.
  const serveOption = options.serve
    ? typeof options.serve === 'object'
      ? options.serve
      : {}
    : undefined
  let serving: Promise<ServerHandle> | undefined
  const ready = async () => {
    const { store, runtime } = await lifecycle.boot()
    if (serving) await serving
    return { store, runtime: runtimeView(runtime) }
  }
  const readyFn = Object.assign(() => ready(), {
    // `await engine.ready` (without the call) waits for the same thing instead of nothing
    // (docs/decisions.md, "ready is also awaitable bare").
    // biome-ignore lint/suspicious/noThenProperty: the thenable is the point
    then: <A = EngineReady, B = never>(
      onReady?: ((value: EngineReady) => A | PromiseLike<A>) | null,
      onFailed?: ((reason: unknown) => B | PromiseLike<B>) | null,
    ) => ready().then(onReady, onFailed),
  }) as ReadyFunction

  const engine: Engine = {
    ready: readyFn,
    // The output a run records is the definition's `output`: its type is the definition's.
    start: (async (definition: Definition, input?: unknown, opts?: StartOptions) =>
      (await rt()).start(definition, input, opts)) as Engine['start'],
    startRun: async (args: StartRunArgs, hooks?: StartHooks): Promise<StartResult> =>
      (await rt()).startRun(args, hooks),
    // With a definition: the run is checked to be of it, so the typed output holds.
    getRun: (async (runId: string, definition?: Definition) =>
      runOf(await (await rt()).getRun(runId), definition)) as Engine['getRun'],
    result: (async (runId: string, ...args: unknown[]) => {
      const [definition, resultOptions] = splitResultArgs<Definition, ResultOptions>(args)
      if (definition) runOf(await (await rt()).getRun(runId), definition)
      return waits.result(runId, resultOptions)
    }) as Engine['result'],
    getEvents: async (runId: string, opts?: { fromSeq?: number; limit?: number }) =>
      (await rt()).getEvents(runId, opts),
    signal: async (runId: string, events: readonly EventInput[], opts?: SignalOptions) =>
      (await rt()).signal(runId, events, opts),
    wake: async (runId: string) => (await rt()).wake(runId),
    cancel: async (runId: string, threadId?: string) => (await rt()).cancel(runId, threadId),
    listRuns: async () => (await rt()).listRuns(),
    retryMany: (filter: RunFilter, bulk?: BulkOptions) => bulkAction(engine, 'retry', filter, bulk),
    wakeMany: (filter: RunFilter, bulk?: BulkOptions) => bulkAction(engine, 'wake', filter, bulk),
    cancelMany: (filter: RunFilter, bulk?: BulkOptions) =>
      bulkAction(engine, 'cancel', filter, bulk),
    migrateRun: async (runId: string, migrate: MigrateOptions, caller?: CallerContext) =>
      (await rt()).migrateRun(runId, migrate, caller),
    migrateRuns: (filter: RunFilter, migrate: MigrateManyOptions, caller?: CallerContext) =>
      migrateMany(engine, filter, migrate, caller),
    listRunSummaries: async (query?: SummaryQuery) => (await rt()).listRunSummaries(query),
    listDefinitions: async () => describeDefinitions((await rt()).registry),
    queues: async () => (await rt()).queues(),
    versions: async () => {
      const { runtime } = await lifecycle.boot()
      return versionReport(runtime.ctx, fingerprints)
    },
    project: async <S>(runId: string, projection: ProjectionDefinition<S> | string) =>
      (await rt()).project<S>(runId, projection),
    replayTo: async (runId: string, seq: number) => (await rt()).replayTo(runId, seq),
    inspectRun: async (runId: string) => (await rt()).inspectRun(runId),
    listEffects: async (runId: string) => (await rt()).listEffects(runId),
    listThreads: async (runId: string) => (await rt()).listThreads(runId),
    retryEffect: async (runId: string, effectId: string, caller?: CallerContext) =>
      (await rt()).retryEffect(runId, effectId, caller),
    requeueEffect: async (runId: string, effectId: string, caller?: CallerContext) =>
      (await rt()).requeueEffect(runId, effectId, caller),
    failEffect: async (runId: string, effectId: string, caller?: CallerContext) =>
      (await rt()).failEffect(runId, effectId, caller),
    deleteRun: async (runId, deleteOptions) => (await rt()).deleteRun(runId, deleteOptions),
    restoreRun: async (run) => (await rt()).restoreRun(run),
    fork: async (runId, forkOptions) => (await rt()).fork(runId, forkOptions),
    workerCallback: async (runId: string, input: WorkerCallbackInput) =>
      (await rt()).workerCallback(runId, input),
    completeWaitUrl: async (token, request) => (await rt()).completeWaitUrl(token, request),
    rescanTimers: async () => (await rt()).rescanTimers(),
    recoverDeadlines: async () => (await rt()).recoverDeadlines(),
    retention: async () => {
      await rt()
      return (await lifecycle.boot()).retention?.status() ?? { enabled: false }
    },
    projectors: async () => {
      await rt()
      return (await lifecycle.boot()).projectors.status()
    },
    subscribe: async (runId: string, listener: (events: readonly EventEnvelope[]) => void) =>
      (await rt()).subscribe(runId, listener),
    subscribeTransient(runId: string, listener: (event: TransientEvent) => void) {
      // Synchronous so a stream can subscribe before it starts a run; listeners attached
      // before the engine is ready are attached once it is.
      let unsubscribe: (() => void) | undefined
      let cancelled = false
      const runtime = lifecycle.runtime
      if (runtime) unsubscribe = runtime.subscribeTransient(runId, listener)
      else
        lifecycle.boot().then(
          ({ runtime: booted }) => {
            if (!cancelled) unsubscribe = booted.subscribeTransient(runId, listener)
          },
          () => {},
        )
      return () => {
        cancelled = true
        unsubscribe?.()
      }
    },
    fetch: async (request: Request) => {
      try {
        await rt()
      } catch (error) {
        return errorResponse(error)
      }
      return (http ?? (await handler())).fetch(request)
    },
    serve: async (serveOptions: ServeOptions = {}) => {
      await handler()
      return lifecycle.serve((request) => http!.fetch(request), serveOptions)
    },
    stop: (stopOptions?: StopOptions) =>
      lifecycle.stop(stopOptions).finally(() => {
        waits.stop()
        causes?.close()
      }),
    get runtime() {
      return lifecycle.boot().then(({ runtime }) => runtimeView(runtime))
    },
    get store() {
      return lifecycle.boot().then(({ store }) => store)
    },
    schedules: engineSchedules(async () => {
      await rt()
      return (await lifecycle.boot()).schedules.service
    }),
  }

  // A pending call keeps the process alive; the engine's own timers do not (keep-alive.ts).
  holdProcessDuringCalls(engine)
  const waits = new TerminalWaits(engine, clock)
  markApiBasePath(engine, apiBasePath)
  // Boot now, not at the first call: a restarted process resumes interrupted attempts and due
  // timers by itself. Failures reach ready(), the observer and the logger.
  lifecycle.boot().catch(() => {})
  if (serveOption) {
    serving = engine.serve(serveOption)
    serving.catch((error) => {
      // Stopped before it listened: nothing failed.
      if (!EngineStoppedError.is(error)) lifecycle.reportServeFailure(error, serveOption)
    })
  }
  // `Defs` is a type only: it types `signal`'s declared payloads, which the run checks anyway.
  return engine as Engine<Defs>
}

/** `engine.schedules`: each call waits for the boot, and is refused once the engine stops. */
function engineSchedules(service: () => Promise<Booted['schedules']['service']>): EngineSchedules {
  return {
    list: async () => (await service()).list(),
    get: async (name) => (await service()).get(name),
    create: async (schedule) => (await service()).create(schedule),
    update: async (name, patch) => (await service()).update(name, patch),
    pause: async (name) => (await service()).pause(name),
    resume: async (name) => (await service()).resume(name),
    delete: async (name) => (await service()).delete(name),
    trigger: async (name) => (await service()).trigger(name),
    backfill: async (name, range) => (await service()).backfill(name, range),
  }
}

function runtimeView(runtime: RuntimeEngine): EngineRuntime {
  return {
    registry: runtime.registry,
    idle: () => runtime.idle(),
    worker: runtime.ctx.worker,
    startClaimedTasks: (tasks) => runtime.startClaimedTasks(tasks),
    restoreWorkerTasks: (runId) => runtime.restoreWorkerTasks(runId),
  }
}

/** Projector names in `coverage` become a function of the projectors' checkpoints. */
function resolveTrim(
  trim: EngineOptions['trimAfterSnapshot'],
  projectors: ProjectorRunner,
): ResolvedTrim | undefined {
  if (!trim || typeof trim.coverage === 'function' || trim.coverage === undefined) {
    return trim as ResolvedTrim | undefined
  }
  const names = [...trim.coverage]
  for (const name of names) {
    if (!projectors.names.includes(name)) {
      throw new TypeError(
        `createEngine: trimAfterSnapshot.coverage names ${name}, which is not a registered projector`,
      )
    }
  }
  return {
    keepSnapshots: trim.keepSnapshots,
    coverage: (runId) => projectors.coveredSeq(runId, names),
  }
}

async function resolveStore(option: EngineOptions['store']): Promise<EventStore> {
  if (option === undefined) return memoryStore()
  const value = typeof option === 'function' ? await option() : await option
  if (!value || typeof value.append !== 'function' || typeof value.read !== 'function') {
    throw new TypeError(
      'createEngine: store must be an EventStore (append, read, tail, bounds, listRuns)',
    )
  }
  return value
}
