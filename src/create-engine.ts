import { withProps } from './core/copy.js'
import type { Definition } from './core/definition.js'
import type { EventEnvelope, EventInput, StartResult, TransientEvent } from './core/envelope.js'
import type { EventStore, SnapshotStore } from './core/ports.js'
import type { ProjectionDefinition } from './core/projection.js'
import { Registry } from './core/registry.js'
import type { SummaryQuery } from './core/summaries.js'
import { validateApiBasePath, validateDebuggerHost } from './http/debugger-path.js'
import { errorResponse } from './http/error-response.js'
import { createHttpHandler, type HttpHandler } from './http/handler.js'
import { markApiBasePath } from './http/node-middleware.js'
import { serveHandler } from './http/server.js'
import { resolveSseLimits } from './http/sse-limits.js'
import type { EngineContext } from './runtime/context.js'
import { describeDefinitions } from './runtime/definitions.js'
import { RuntimeEngine } from './runtime/engine.js'
import type {
  CallerContext,
  Engine,
  EngineRuntime,
  ServeOptions,
  ServerHandle,
  SignalOptions,
  StartHooks,
  StartOptions,
  StartRunArgs,
} from './runtime/engine-types.js'
import { localScheduler } from './runtime/local-scheduler.js'
import type { EngineOptions, Observation, WorkerCallbackInput } from './runtime/options.js'
import { resolveOptions } from './runtime/options.js'
import { defaultIds, systemClock } from './runtime/system.js'
import { memorySnapshotStore } from './stores/memory/memory-snapshot-store.js'
import { memoryStore } from './stores/memory/memory-store.js'

/**
 * Creates a Skein engine: the embed API, a Web `fetch` handler and an optional Node server.
 * Nothing is installed by default; the store is in memory unless you pass one.
 *
 * @example
 * const engine = createEngine({ modules: [workflow({ definitions: [hello] })] })
 * const { runId, state } = await engine.start(hello, { name: 'Ada' })
 */
export function createEngine(options: EngineOptions = {}): Engine {
  const resolved = resolveOptions(options)
  const registry = new Registry(options.modules ?? [])
  registry.foldProjections = options.trimAfterSnapshot !== undefined
  const apiBasePath = validateApiBasePath(options.http?.basePath)
  if (options.debugger !== undefined) validateDebuggerHost(options.debugger, apiBasePath)
  // Checked now, not at the first request: a bad bound is a mistake in the caller's code.
  resolveSseLimits(options.http?.sse)
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

  let runtime: RuntimeEngine | undefined
  let http: HttpHandler | undefined
  const servers = new Set<ServerHandle>()

  const boot = async () => {
    const store = await resolveStore(options.store)
    const snapshots: SnapshotStore =
      options.snapshotStore ?? store.snapshots ?? memorySnapshotStore()
    const ctx: EngineContext = {
      registry,
      ids: options.ids ?? defaultIds(),
      clock,
      options: resolved,
      store,
      snapshots,
      scheduler,
      worker: options.worker,
      trim: options.trimAfterSnapshot,
      observing: sink !== undefined,
      observe,
      requestDrive: (runId) => runtime?.requestDrive(runId),
      publishTransient: (event) => runtime?.publishTransient(event),
    }
    runtime = new RuntimeEngine(ctx)
    const rt = runtime
    scheduler.start((runId) => rt.wakeDue(runId).catch(() => undefined), clock)
    if (resolved.rescanTimers) await rt.rescanTimers()
    return { store, runtime: rt }
  }
  // A failed boot (store unreachable, rescan failed) is not final: the next call tries again.
  let booting: ReturnType<typeof boot> | undefined
  const ready = () => {
    if (!booting) {
      booting = boot()
      booting.catch(() => {
        booting = undefined
      })
    }
    return booting
  }

  const rt = async () => (await ready()).runtime
  const handler = (): HttpHandler => {
    http ??= createHttpHandler(engine, {
      authorize: options.authorize,
      debugger: options.debugger,
      basePath: apiBasePath,
      maxRequestBytes: resolved.maxRequestBytes,
      maxEventBytes: resolved.maxEventBytes,
      sse: options.http?.sse,
    })
    return http
  }

  const engine: Engine = {
    async ready() {
      const { store, runtime } = await ready()
      return { store, runtime: runtimeView(runtime) }
    },
    start: async (definition: Definition, input?: unknown, opts?: StartOptions) =>
      (await rt()).start(definition, input, opts),
    startRun: async (args: StartRunArgs, hooks?: StartHooks): Promise<StartResult> =>
      (await rt()).startRun(args, hooks),
    getRun: async (runId: string) => (await rt()).getRun(runId),
    getEvents: async (runId: string, opts?: { fromSeq?: number; limit?: number }) =>
      (await rt()).getEvents(runId, opts),
    signal: async (runId: string, events: readonly EventInput[], opts?: SignalOptions) =>
      (await rt()).signal(runId, events, opts),
    wake: async (runId: string) => (await rt()).wake(runId),
    cancel: async (runId: string, threadId?: string) => (await rt()).cancel(runId, threadId),
    listRuns: async () => (await rt()).listRuns(),
    listRunSummaries: async (query?: SummaryQuery) => (await rt()).listRunSummaries(query),
    listDefinitions: async () => describeDefinitions((await rt()).registry),
    project: async <S>(runId: string, projection: ProjectionDefinition<S> | string) =>
      (await rt()).project<S>(runId, projection),
    replayTo: async (runId: string, seq: number) => (await rt()).replayTo(runId, seq),
    inspectRun: async (runId: string) => (await rt()).inspectRun(runId),
    listEffects: async (runId: string) => (await rt()).listEffects(runId),
    listThreads: async (runId: string) => (await rt()).listThreads(runId),
    retryEffect: async (runId: string, effectId: string, caller?: CallerContext) =>
      (await rt()).retryEffect(runId, effectId, caller),
    workerCallback: async (runId: string, input: WorkerCallbackInput) =>
      (await rt()).workerCallback(runId, input),
    rescanTimers: async () => (await rt()).rescanTimers(),
    recoverDeadlines: async () => (await rt()).recoverDeadlines(),
    subscribe: async (runId: string, listener: (events: readonly EventEnvelope[]) => void) =>
      (await rt()).subscribe(runId, listener),
    subscribeTransient(runId: string, listener: (event: TransientEvent) => void) {
      // Synchronous so a stream can subscribe before it starts a run; listeners attached
      // before the engine is ready are attached once it is.
      let unsubscribe: (() => void) | undefined
      let cancelled = false
      if (runtime) unsubscribe = runtime.subscribeTransient(runId, listener)
      else
        ready().then(
          ({ runtime: rt }) => {
            if (!cancelled) unsubscribe = rt.subscribeTransient(runId, listener)
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
        await ready()
      } catch (error) {
        return errorResponse(error)
      }
      return handler().fetch(request)
    },
    async serve(serveOptions: ServeOptions = {}) {
      await ready()
      const h = handler()
      const server = await serveHandler(h.fetch, { ...serveOptions, closeStreams: h.closeStreams })
      const handle: ServerHandle = {
        ...server,
        async close() {
          servers.delete(handle)
          await server.close()
        },
      }
      servers.add(handle)
      return handle
    },
    async stop() {
      http?.closeStreams()
      await Promise.allSettled([...servers].map((s) => s.close()))
      if (runtime) await runtime.stop()
    },
    get runtime() {
      return ready().then(({ runtime }) => runtimeView(runtime))
    },
    get store() {
      return ready().then(({ store }) => store)
    },
  }

  markApiBasePath(engine, apiBasePath)
  if (options.serve) {
    const serveOptions = typeof options.serve === 'object' ? options.serve : {}
    engine.serve(serveOptions).catch((error) => {
      observe({
        type: 'wake.finished',
        runId: '',
        error: `serve failed: ${error?.message ?? error}`,
      })
    })
  }
  return engine
}

function runtimeView(runtime: RuntimeEngine): EngineRuntime {
  return { registry: runtime.registry, idle: () => runtime.idle(), worker: runtime.ctx.worker }
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
