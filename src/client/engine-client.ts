import type {
  DefinitionInfo,
  EffectAttemptView,
  QueueInfo,
  ReplayStep,
  RunOperationalStatus,
  StartRunArgs,
  VersionReport,
  WaitFor,
} from '../core/api-types.js'
import type { ArchivedRun, RestoredRun } from '../core/archive-types.js'
import type { BulkOptions, BulkResult, RunFilter } from '../core/bulk-types.js'
import { type Definition, runIsOf, runNotOfMessage, splitResultArgs } from '../core/definition.js'
import type {
  EventEnvelope,
  EventInput,
  RunState,
  StartResult,
  ThreadState,
  TransientEvent,
} from '../core/envelope.js'
import type { ForkOptions, ForkResult } from '../core/fork-types.js'
import type { Json, JsonObject } from '../core/json.js'
import type { MigrateManyOptions, MigrateOptions, RunMigration } from '../core/migration-types.js'
import type { DeletedRun, RunSummary, SummaryPage, SummaryQuery } from '../core/ports.js'
import type { ProjectorStatus } from '../core/projector-status.js'
import type { RetentionStatus } from '../core/retention-types.js'
import type { BackfillResult, ScheduleInfo } from '../core/schedule-types.js'
import { newRunId, startKeyRunId } from '../core/uuid.js'
import { ClientError, clientErrorOf, networkError } from './client-error.js'
import { awaitResult } from './result.js'
import { openRunStream, type RunStream } from './run-stream.js'
import {
  type ClientTimers,
  type ReconnectOptions,
  type SubscribeOptions,
  subscribeEvents,
} from './subscribe-events.js'

export interface EngineClientOptions {
  /** The server's origin plus any mount prefix, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string
  /** Injected fetch (tests pass the handler itself: no socket needed). Default: global fetch. */
  fetch?: (request: Request) => Promise<Response>
  /** Extra headers on every request, e.g. `{ authorization: 'Bearer …' }`. */
  headers?: Record<string, string> | (() => Record<string, string>)
  /** Reconnect backoff of `subscribeEvents`. */
  reconnect?: ReconnectOptions
  /** Timer source for reconnect delays (tests inject one). */
  timers?: ClientTimers
  /** Jitter source in [0, 1) (tests inject one). */
  random?: () => number
}

export interface StartOptions {
  runId?: string
  threadId?: string
  /**
   * Stable across retries of the same logical start. Without a `runId`, the run is named after
   * the key, so a retry returns the run the key created.
   */
  idempotencyKey?: string
  /** `'settled'`: the server answers once the run is finished, or parked with nothing in flight. */
  wait?: WaitFor
  /** The run's deadline in ms from its start (docs/workflows.md, "Run deadline"). */
  timeoutMs?: number
  /** Higher first among the queued runs of its flow-control key (docs/flow-control.md). */
  priority?: number
  /** Not started before this time (epoch ms): a durable delayed start (docs/flow-control.md). */
  startAt?: number
}

export interface SignalOptions {
  idempotencyKey?: string
  /** `'settled'`: the server answers once the run is finished, or parked with nothing in flight. */
  wait?: WaitFor
}

export interface StreamOptions {
  /** Transient (never stored) events while the run starts, e.g. an agent's text deltas. */
  onTransient?: (event: TransientEvent) => void
}

const DEFAULT_TIMERS: ClientTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

/**
 * The client's calls, loosely typed: `createEngineClient` (typed-client.ts) gives them their
 * types, by the definitions it is told of.
 */
export function createHttpClient(options: EngineClientOptions) {
  const base = options.baseUrl.replace(/\/+$/, '')
  const doFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request))
  const seg = encodeURIComponent

  const headers = (extra?: Record<string, string>) => {
    const fixed = typeof options.headers === 'function' ? options.headers() : options.headers
    return new Headers(Object.assign({}, fixed, extra))
  }

  async function call<T>(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
    extra?: Record<string, string>,
  ): Promise<T> {
    const init: RequestInit = { method, headers: headers(extra) }
    if (body !== undefined) {
      ;(init.headers as Headers).set('content-type', 'application/json')
      init.body = JSON.stringify(body)
    }
    let response: Response
    try {
      response = await doFetch(new Request(base + path, init))
    } catch (error) {
      throw networkError(error)
    }
    if (!response.ok) throw await clientErrorOf(response)
    return (await response.json()) as T
  }

  /** One page of run summaries, newest first; `nextCursor` is null on the last page. */
  const listRunSummaries = (query: SummaryQuery = {}) => {
    const params = new URLSearchParams()
    const { attributes, ...rest } = query
    for (const [name, value] of Object.entries(rest)) {
      // Several statuses go as one comma-separated parameter.
      if (value !== undefined)
        params.set(name, Array.isArray(value) ? value.join(',') : String(value))
    }
    // Each attribute filter is an `attr` parameter: name=value, name>=min, name<=max.
    for (const [name, filter] of Object.entries(attributes ?? {})) {
      if (filter !== null && typeof filter === 'object') {
        if (filter.min !== undefined) params.append('attr', `${name}>=${filter.min}`)
        if (filter.max !== undefined) params.append('attr', `${name}<=${filter.max}`)
      } else params.append('attr', `${name}=${filter}`)
    }
    const qs = params.size ? `?${params}` : ''
    return call<SummaryPage>('GET', `/runs/summaries${qs}`)
  }

  const startBody = (args: StartRunArgs) => JSON.parse(JSON.stringify(args)) as Json

  const streamRun = (args: StartRunArgs, streamOptions: StreamOptions = {}): RunStream => {
    // Picked here (in the engine's default format), so `stream.runId` is known at once and still
    // names the run if the connection drops before the first frame; a keyed start names its run
    // after the key, as the server does.
    const runId =
      args.runId ??
      (args.idempotencyKey === undefined
        ? newRunId(Date.now())
        : startKeyRunId(args.idempotencyKey))
    return openRunStream(runId, streamOptions.onTransient, (signal) =>
      doFetch(
        new Request(`${base}/runs`, {
          method: 'POST',
          headers: headers({ 'content-type': 'application/json', accept: 'text/event-stream' }),
          body: JSON.stringify({ ...args, runId }),
          signal,
        }),
      ),
    )
  }

  const argsOf = (
    definition: Definition,
    input: unknown,
    start: StartOptions = {},
  ): StartRunArgs => ({
    kind: definition.kind,
    definitionName: definition.name,
    definitionVersion: definition.version,
    ...(input === undefined ? {} : { input: input as Json }),
    ...start,
  })

  type RunBody = { runId: string; state: RunState }
  /** `getRun` with a definition (an object, or a name): the run must be of it. */
  const getRun = async (runId: string, definition?: Definition | string): Promise<RunBody> => {
    const body = await call<RunBody>('GET', `/runs/${seg(runId)}`)
    if (definition === undefined || runIsOf(body.state, definition)) return body
    throw new ClientError(0, 'INVALID_REQUEST', runNotOfMessage(runId, body.state, definition), {
      runId,
      kind: body.state.kind,
      definitionName: body.state.definitionName,
    })
  }

  return {
    health: () => call<{ ok: true }>('GET', '/health'),
    start: (definition: Definition, input?: unknown, start?: StartOptions) =>
      call<StartResult>('POST', '/runs', startBody(argsOf(definition, input, start))),
    startRun: (args: StartRunArgs) => call<StartResult>('POST', '/runs', startBody(args)),
    listRuns: () => call<{ runIds: string[] }>('GET', '/runs'),
    listRunSummaries,
    /** Every run summary matching `query` (newest first), fetched a page at a time. */
    async *allRunSummaries(query: Omit<SummaryQuery, 'cursor'> = {}): AsyncGenerator<RunSummary> {
      let cursor: string | undefined
      do {
        const page = await listRunSummaries(cursor === undefined ? query : { ...query, cursor })
        yield* page.runs
        cursor = page.nextCursor ?? undefined
      } while (cursor !== undefined)
    },
    listDefinitions: () => call<{ definitions: DefinitionInfo[] }>('GET', '/definitions'),
    /** Flow control's queues, per key (docs/flow-control.md). */
    queues: () => call<{ queues: QueueInfo[] }>('GET', '/queues'),
    /** The drift report: runs not yet terminal per definition version (docs/deploys.md). */
    versions: () => call<VersionReport>('GET', '/definitions/versions'),
    getRun,
    /**
     * Waits for the run to finish (long-polls of `GET /runs/:id?wait=terminal`, each at most a
     * minute) and resolves with its output; rejects with RUN_FAILED (the run's error in
     * `details.error`), RUN_CANCELLED, or RESULT_TIMEOUT once `timeoutMs` passes first.
     */
    result: async (runId: string, ...args: unknown[]) => {
      const [definition, resultOptions = {}] = splitResultArgs<
        Definition | string,
        { timeoutMs?: number }
      >(args)
      if (definition !== undefined) await getRun(runId, definition)
      return awaitResult(runId, resultOptions.timeoutMs, (timeoutMs) =>
        call<RunBody>('GET', `/runs/${seg(runId)}?wait=terminal&timeoutMs=${timeoutMs}`),
      )
    },
    getEvents: (
      runId: string,
      range: { fromSeq?: number; limit?: number; types?: readonly string[] } = {},
    ) => {
      const query = new URLSearchParams()
      if (range.fromSeq !== undefined) query.set('fromSeq', String(range.fromSeq))
      if (range.limit !== undefined) query.set('limit', String(range.limit))
      if (range.types !== undefined) query.set('types', range.types.join(','))
      const qs = query.size ? `?${query}` : ''
      return call<{ runId: string; events: EventEnvelope[] }>(
        'GET',
        `/runs/${seg(runId)}/events${qs}`,
      )
    },
    signal: (runId: string, events: readonly EventInput[], opts: SignalOptions = {}) =>
      call<{ runId: string; state: RunState }>('POST', `/runs/${seg(runId)}/events`, {
        events,
        ...(opts.idempotencyKey === undefined ? {} : { idempotencyKey: opts.idempotencyKey }),
        ...(opts.wait === undefined ? {} : { wait: opts.wait }),
      }),
    wake: (runId: string) =>
      call<{ runId: string; state: RunState }>('POST', `/runs/${seg(runId)}/wake`),
    listThreads: (runId: string) =>
      call<{ runId: string; threads: ThreadState[] }>('GET', `/runs/${seg(runId)}/threads`),
    inspectRun: (runId: string) => call<RunOperationalStatus>('GET', `/runs/${seg(runId)}/status`),
    listEffects: (runId: string) =>
      call<{ runId: string; effects: EffectAttemptView[] }>('GET', `/runs/${seg(runId)}/effects`),
    retryEffect: (runId: string, effectId: string) =>
      call<{ runId: string; effectId: string; state: RunState }>(
        'POST',
        `/runs/${seg(runId)}/effects/${seg(effectId)}/retry`,
      ),
    /** `GET /operations/retention` (operations access): the retention sweep's state. */
    retention: () => call<{ retention: RetentionStatus }>('GET', '/operations/retention'),
    /** A worker attempt stuck `dispatched` or `started`: a new attempt at once. */
    requeueEffect: (runId: string, effectId: string) =>
      call<{ runId: string; effectId: string; state: RunState }>(
        'POST',
        `/runs/${seg(runId)}/effects/${seg(effectId)}/requeue`,
      ),
    /** A worker attempt stuck `dispatched` or `started` fails; the retry policy decides. */
    failEffect: (runId: string, effectId: string) =>
      call<{ runId: string; effectId: string; state: RunState }>(
        'POST',
        `/runs/${seg(runId)}/effects/${seg(effectId)}/fail`,
      ),
    /** `DELETE /runs/:id` (operations access): the run deleted whole (docs/data-lifecycle.md). */
    deleteRun: (runId: string, options: { force?: boolean } = {}) =>
      call<{ deleted: DeletedRun }>(
        'DELETE',
        `/runs/${seg(runId)}${options.force ? '?force=true' : ''}`,
      ),
    /** `POST /operations/restore` (operations access): an archived run back into the store. */
    restoreRun: (run: ArchivedRun) =>
      call<{ restored: RestoredRun }>('POST', '/operations/restore', { run }),
    replayTo: (runId: string, seq: number) =>
      call<{ runId: string; step: ReplayStep | null }>(
        'GET',
        `/runs/${seg(runId)}/replay?seq=${seq}`,
      ),
    project: <V = Json>(runId: string, name: string) =>
      call<{ runId: string; name: string; value: V }>(
        'GET',
        `/runs/${seg(runId)}/projections/${seg(name)}`,
      ),
    /**
     * Bulk actions by filter (operations access; docs/operating-runs.md): retries the failed
     * effects of, or wakes, every matching run; `dryRun` only counts. A non-empty filter.
     */
    retryMany: (filter: RunFilter, bulk: Omit<BulkOptions, 'onProgress'> = {}) =>
      call<BulkResult>('POST', '/operations/runs/retry', { filter, ...bulk }),
    wakeMany: (filter: RunFilter, bulk: Omit<BulkOptions, 'onProgress'> = {}) =>
      call<BulkResult>('POST', '/operations/runs/wake', { filter, ...bulk }),
    /**
     * Cancels the run, or one thread of it (operations access). Only on a host that serves the
     * opt-in cancel routes; elsewhere a ClientError 503 NOT_CONFIGURED (docs/operating-runs.md).
     */
    cancel: (runId: string, options: { threadId?: string } = {}) =>
      call<{ runId: string; state: RunState }>(
        'POST',
        `/runs/${seg(runId)}/cancel`,
        options.threadId === undefined ? undefined : { threadId: options.threadId },
      ),
    /** Cancels every run matching `filter`, as `retryMany` retries (the opt-in cancel routes). */
    cancelMany: (filter: RunFilter, bulk: Omit<BulkOptions, 'onProgress'> = {}) =>
      call<BulkResult>('POST', '/operations/runs/cancel', { filter, ...bulk }),
    /**
     * A new run from this run's log before `atSeq` or node `atNode`, going on with the code the
     * server runs now (operations access; docs/operating-runs.md, "Fork").
     */
    fork: (runId: string, options: ForkOptions & { input?: Json }) =>
      call<ForkResult>('POST', `/runs/${seg(runId)}/fork`, options),
    /**
     * Moves a run not yet finished to another version of its definition (operations access;
     * docs/deploys.md, "Migrating runs"): refused with `MIGRATION_REFUSED` (409) and the
     * differences in `details.differences` when unsafe; `dryRun` only checks.
     */
    migrateRun: (runId: string, options: MigrateOptions) =>
      call<{ migration: RunMigration }>('POST', `/runs/${seg(runId)}/migrate`, { ...options }),
    /** `migrateRun` for every run matching `filter`, which names the definition. */
    migrateRuns: (filter: RunFilter, options: Omit<MigrateManyOptions, 'onProgress'>) =>
      call<BulkResult>('POST', '/operations/runs/migrate', { filter, ...options }),
    rescanDeadlines: () => call<{ scheduled: number }>('POST', '/operations/deadlines/rescan'),
    /** Each projector's state, checkpoint, lag and last error (operations access). */
    projectors: () => call<{ projectors: ProjectorStatus[] }>('GET', '/operations/projectors'),
    /** Schedules (docs/schedules.md): listing needs read access, every change operations. */
    schedules: {
      list: () => call<{ schedules: ScheduleInfo[] }>('GET', '/schedules'),
      get: (name: string) => call<{ schedule: ScheduleInfo }>('GET', `/schedules/${seg(name)}`),
      /** The schedule's options as JSON: `start` names its definition, its input is JSON. */
      create: (schedule: JsonObject) =>
        call<{ schedule: ScheduleInfo }>('POST', '/schedules', schedule),
      update: (name: string, patch: JsonObject) =>
        call<{ schedule: ScheduleInfo }>('POST', `/schedules/${seg(name)}`, patch),
      pause: (name: string) =>
        call<{ schedule: ScheduleInfo }>('POST', `/schedules/${seg(name)}/pause`),
      resume: (name: string) =>
        call<{ schedule: ScheduleInfo }>('POST', `/schedules/${seg(name)}/resume`),
      delete: (name: string) => call<{ deleted: string }>('DELETE', `/schedules/${seg(name)}`),
      trigger: (name: string) =>
        call<{ runId: string; state: RunState | null }>('POST', `/schedules/${seg(name)}/trigger`),
      /** Starts every tick of `[from, to]` not started yet (epoch ms or ISO 8601 times). */
      backfill: (name: string, range: { from: number | string; to: number | string }) =>
        call<BackfillResult>('POST', `/schedules/${seg(name)}/backfill`, range),
    },
    /**
     * POSTs `body` to a wait URL (the URL's token is its credential). Resolves with what it
     * completed; refusals reject (404 unknown, 410 used or expired, 401 bad signature).
     */
    completeWaitUrl: async (url: string, body: Json, extraHeaders: Record<string, string> = {}) => {
      let response: Response
      try {
        response = await doFetch(
          new Request(url.startsWith('/') ? base + url : url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...extraHeaders },
            body: JSON.stringify(body),
          }),
        )
      } catch (error) {
        throw networkError(error)
      }
      if (!response.ok) throw await clientErrorOf(response)
      return (await response.json()) as { runId: string; completed: boolean; tokenId: string }
    },
    subscribeEvents: (
      runId: string,
      onEvent: (event: EventEnvelope) => void,
      opts?: SubscribeOptions,
    ) =>
      subscribeEvents(
        {
          url: () => {
            const types = opts?.types
            const query = types ? `?${new URLSearchParams({ types: types.join(',') })}` : ''
            return `${base}/runs/${seg(runId)}/events${query}`
          },
          headers: () => headers(),
          fetch: (input, init) => doFetch(new Request(input as string, init)),
          timers: options.timers ?? DEFAULT_TIMERS,
          reconnect: {
            initialDelayMs: options.reconnect?.initialDelayMs ?? 500,
            maxDelayMs: options.reconnect?.maxDelayMs ?? 30_000,
          },
          random: options.random ?? Math.random,
        },
        onEvent,
        opts,
      ),
    stream: (
      definition: Definition,
      input?: unknown,
      start?: StartOptions,
      streamOptions?: StreamOptions,
    ) => streamRun(argsOf(definition, input, start), streamOptions),
    streamRun,
  }
}

/** The client's calls as `createHttpClient` types them (before typed-client.ts types them). */
export type HttpClient = ReturnType<typeof createHttpClient>
