import {
  EngineStoppedError,
  InvalidRequestError,
  PortInUseError,
  ServeError,
} from './core/errors.js'
import type { EventStore } from './core/ports.js'
import type { RuntimeEngine } from './runtime/engine.js'
import type { Schedules } from './runtime/engine-schedules.js'
import type { ServeOptions, ServerHandle, StopOptions } from './runtime/engine-types.js'
import { errorFields, type Logger } from './runtime/logger.js'
import type { Observation } from './runtime/options.js'
import type { ProjectorRunner } from './runtime/projectors.js'
import type { RetentionSweeper } from './runtime/retention.js'

export interface Booted {
  store: EventStore
  runtime: RuntimeEngine
  projectors: ProjectorRunner
  schedules: Schedules
  /** The retention sweep, with the `retention` option. */
  retention?: RetentionSweeper
}

interface LifecycleDeps {
  /** Opens the store, composes the runtime, starts the scheduler and recovery. */
  boot(): Promise<Booted>
  log: Logger
  observe(observation: Omit<Observation, 'at'>): void
  /** Ends the HTTP handler's open streams (SSE) before servers close. */
  closeStreams(): void
}

/**
 * The engine's life: boot at creation (so a restarted process resumes its runs without a
 * call), servers, and a stop that settles every pending call. A failed boot is retried by the
 * next call; once `stop()` is called every call is refused with ENGINE_STOPPED.
 */
export class EngineLifecycle {
  private booting: Promise<Booted> | undefined
  private booted: Booted | undefined
  private stopping: Promise<void> | undefined
  private readonly servers = new Set<ServerHandle>()

  constructor(private readonly deps: LifecycleDeps) {}

  /** The runtime once booted (undefined before), for synchronous callers. */
  get runtime(): RuntimeEngine | undefined {
    return this.booted?.runtime
  }

  get isStopping(): boolean {
    return this.stopping !== undefined
  }

  /** Boots (again, after a failure); every call goes through here. */
  boot(): Promise<Booted> {
    if (!this.booting) {
      const booting = this.deps.boot()
      this.booting = booting
      booting.then(
        (booted) => {
          this.booted = booted
        },
        (error) => {
          if (this.booting === booting) this.booting = undefined
          const fields = errorFields(error)
          this.deps.observe({ type: 'boot.failed', runId: '', error: fields.message })
          this.deps.log.error(fields, 'engine boot failed; the next call tries again')
        },
      )
    }
    return this.booting
  }

  /** The runtime for a call; refused once the engine is stopping. */
  async call(): Promise<RuntimeEngine> {
    if (this.stopping) throw stoppedError()
    const { runtime } = await this.boot()
    return runtime
  }

  async serve(
    fetch: (request: Request) => Promise<Response | null>,
    options: ServeOptions,
  ): Promise<ServerHandle> {
    if (this.stopping) throw stoppedError()
    await this.boot()
    const port = options.port ?? 8787
    const hostname = options.hostname ?? '127.0.0.1'
    let server: ServerHandle
    try {
      // Imported here: an engine that never serves never loads the Node server adapter.
      const { serveHandler } = await import('./http/server.js')
      server = await serveHandler(fetch, {
        ...options,
        port,
        hostname,
        closeStreams: () => this.deps.closeStreams(),
      })
    } catch (error) {
      throw listenError(error, port, hostname)
    }
    if (this.stopping) {
      await server.close()
      throw stoppedError()
    }
    const handle: ServerHandle = {
      ...server,
      close: async () => {
        this.servers.delete(handle)
        await server.close()
      },
    }
    this.servers.add(handle)
    this.deps.log.info({ url: server.url }, `listening on ${server.url}`)
    return handle
  }

  /** Reports a failure of the `serve` option's server (its promise is `ready()`'s too). */
  reportServeFailure(error: unknown, options: ServeOptions): void {
    const fields = errorFields(error)
    const port = options.port ?? 8787
    const hostname = options.hostname ?? '127.0.0.1'
    this.deps.observe({ type: 'serve.failed', runId: '', port, hostname, ...fields })
    this.deps.log.error({ port, hostname, ...fields }, fields.message)
  }

  stop(options: StopOptions = {}): Promise<void> {
    const graceMs = options?.graceMs ?? 0
    if (typeof graceMs !== 'number' || !Number.isFinite(graceMs) || graceMs < 0) {
      return Promise.reject(
        new InvalidRequestError('stop: graceMs must be a finite number of milliseconds >= 0'),
      )
    }
    this.stopping ??= this.shutdown(graceMs)
    return this.stopping
  }

  private async shutdown(graceMs: number): Promise<void> {
    this.deps.closeStreams()
    await Promise.allSettled([...this.servers].map((s) => s.close()))
    const booted = this.booting ? await this.booting.catch(() => undefined) : undefined
    if (booted) await booted.schedules.stop()
    if (booted) await booted.runtime.stop(graceMs)
    if (booted) await booted.projectors.stop()
    this.deps.log.info({ graceMs }, 'engine stopped')
  }
}

const stoppedError = () =>
  new EngineStoppedError('the engine is stopped (stop() was called): nothing was done')

/** A listen failure as one clear line: which port, and what to do about it. */
function listenError(error: unknown, port: number, hostname: string): Error {
  const code = (error as { code?: unknown })?.code
  const where = `${hostname}:${port}`
  const details = { port, hostname, cause: typeof code === 'string' ? code : null }
  if (code === 'EADDRINUSE') {
    return new PortInUseError(
      `port ${port} on ${hostname} is already in use: stop the process that holds it, or serve on another port (0 picks a free one)`,
      details,
    )
  }
  if (code === 'EACCES') {
    return new ServeError(
      `cannot listen on ${where}: permission denied (ports below 1024 need privileges): choose a port from 1024 up`,
      details,
    )
  }
  const message = (error as Error)?.message ?? String(error)
  return new ServeError(`cannot listen on ${where}: ${message}`, details, { cause: error })
}
