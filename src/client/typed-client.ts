import type { StartRunArgs } from '../core/api-types.js'
import type {
  CheckedSignals,
  Definition,
  DefinitionList,
  DefinitionName,
  DefinitionNamed,
  InputOf,
  ResultOf,
  RunOutputOf,
} from '../core/definition.js'
import type { EventInput, RunState, StartResult } from '../core/envelope.js'
import type { Json } from '../core/json.js'
import type { ProjectionDefinition } from '../core/projection.js'
import {
  createHttpClient,
  type EngineClientOptions,
  type HttpClient,
  type SignalOptions,
  type StartOptions,
  type StreamOptions,
} from './engine-client.js'
import type { RunStream } from './run-stream.js'

/** `start`'s input (typed by the definition's schema, optional when it takes `undefined`). */
type StartArgs<D> =
  undefined extends InputOf<D>
    ? [input?: InputOf<D>, options?: StartOptions]
    : [input: InputOf<D>, options?: StartOptions]

/** `stream`'s arguments after the definition: the input as `start` takes it, then options. */
type StreamArgs<D> =
  undefined extends InputOf<D>
    ? [input?: InputOf<D>, start?: StartOptions, streamOptions?: StreamOptions]
    : [input: InputOf<D>, start?: StartOptions, streamOptions?: StreamOptions]

/** `startRun`'s arguments for definition `D`: its kind and name, its input typed. */
type StartRunArgsFor<D> = D extends Definition
  ? Omit<StartRunArgs, 'kind' | 'definitionName' | 'input'> & {
      kind: D['kind']
      definitionName: D['name']
    } & (undefined extends InputOf<D> ? { input?: InputOf<D> } : { input: InputOf<D> })
  : never

type RunBody<O = Json> = { runId: string; state: RunState<O> }

/**
 * The server's projections as a type, by the name its modules register them under
 * (`typeof { pendingApprovals, workflowNodes }`): what a typed client's `project` knows.
 */
export type ProjectionsByName = Readonly<Record<string, ProjectionDefinition>>

type ProjectionBody<V> = { runId: string; name: string; value: V }

/**
 * `project` told of the projections: a name it knows, the value typed by that projection's
 * state. Without them (any name), the value is `Json` unless the caller names its type.
 */
type ProjectCall<Ps extends ProjectionsByName> = string extends keyof Ps
  ? <V = Json>(runId: string, name: string) => Promise<ProjectionBody<V>>
  : <N extends keyof Ps & string>(
      runId: string,
      name: N,
    ) => Promise<ProjectionBody<Ps[N] extends ProjectionDefinition<infer S> ? S : Json>>

/** The calls of a client its definitions and projections type (the rest are `HttpClient`'s). */
export interface TypedCalls<
  Defs extends DefinitionList,
  Ps extends ProjectionsByName = ProjectionsByName,
> {
  /** Starts a run of `definition`: input typed by its schema, `state.output` by its output. */
  start<D extends Definition>(
    definition: D,
    ...args: StartArgs<D>
  ): Promise<StartResult<RunOutputOf<D>>>
  /** Starts a run by kind and name: with a typed client, a name it knows and that one's input. */
  startRun<N extends DefinitionName<Defs>>(
    args: StartRunArgsFor<DefinitionNamed<Defs, N>> & { definitionName: N },
  ): Promise<StartResult<RunOutputOf<DefinitionNamed<Defs, N>>>>
  getRun(runId: string): Promise<RunBody>
  /**
   * With the run's definition (the object, or its name): `state.output` typed by it; a run of
   * another definition rejects with INVALID_REQUEST, so the type holds.
   */
  getRun<D extends Definition>(runId: string, definition: D): Promise<RunBody<RunOutputOf<D>>>
  getRun<N extends DefinitionName<Defs>>(
    runId: string,
    definitionName: N,
  ): Promise<RunBody<RunOutputOf<DefinitionNamed<Defs, N>>>>
  /**
   * Waits for the run to finish (long-polls of `GET /runs/:id?wait=terminal`, each at most a
   * minute) and resolves with its output; rejects with RUN_FAILED (the run's error in
   * `details.error`), RUN_CANCELLED, or RESULT_TIMEOUT once `timeoutMs` passes first. With the
   * run's definition (object or name), the output is typed and the run checked as by `getRun`.
   */
  result<D extends Definition>(
    runId: string,
    definition: D,
    options?: { timeoutMs?: number },
  ): Promise<ResultOf<D>>
  result<N extends DefinitionName<Defs>>(
    runId: string,
    definitionName: N,
    options?: { timeoutMs?: number },
  ): Promise<ResultOf<DefinitionNamed<Defs, N>>>
  // Last: a definition object would also pass for the options.
  result(runId: string, options?: { timeoutMs?: number }): Promise<Json | undefined>
  /**
   * Appends events and wakes the run. An event whose type is a signal the client's definitions
   * declare must carry that signal's payload (the server validates it too: 400, nothing written).
   */
  signal<const E extends readonly EventInput[]>(
    runId: string,
    events: E & CheckedSignals<E, Defs>,
    options?: SignalOptions,
  ): Promise<RunBody>
  /** A projection's value for the run: with the client's projections, a name of theirs, typed. */
  project: ProjectCall<Ps>
  /** Starts a run and streams its events; the input as `start` takes it (required by a schema). */
  stream<D extends Definition>(definition: D, ...args: StreamArgs<D>): RunStream
}

/** A client of a Skein server, typed by the definitions and projections it is told of. */
export type EngineClient<
  Defs extends DefinitionList = DefinitionList,
  Ps extends ProjectionsByName = ProjectionsByName,
> = Omit<HttpClient, keyof TypedCalls<Defs, Ps>> & TypedCalls<Defs, Ps>

/**
 * A typed client for a Skein server. Every helper rejects non-2xx answers with a
 * `ClientError { status, code, message, details }`. Told of the server's definitions (a type
 * only: `import type` them), `startRun`, `getRun`, `result` and `signal` are typed by name;
 * told of its projections by name, so is `project`.
 *
 * @example
 * import type { definitions } from './workflows.js' // [release, order]
 * const client = createEngineClient<typeof definitions>({ baseUrl: 'http://127.0.0.1:8787' })
 * const { runId } = await client.startRun({ kind: 'workflow', definitionName: 'order', input })
 * const output = await client.result(runId, 'order') // typed: order's output
 * // Told of the projections too, by the names modules register them under, `project` is typed:
 * const projections = { pendingApprovals } // a type only, as the definitions
 * const typed = createEngineClient<typeof definitions, typeof projections>(options)
 */
export function createEngineClient<
  Defs extends DefinitionList = DefinitionList,
  Ps extends ProjectionsByName = ProjectionsByName,
>(options: EngineClientOptions): EngineClient<Defs, Ps> {
  return createHttpClient(options) as unknown as EngineClient<Defs, Ps>
}
