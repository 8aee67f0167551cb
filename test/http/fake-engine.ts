import { randomUUID } from 'node:crypto'
import type { EventEnvelope, EventInput, RunState } from '../../src/core/envelope.js'
import {
  DefinitionNotFoundError,
  EffectNotFoundError,
  IdempotencyConflictError,
  ProjectionNotFoundError,
  RunNotFoundError,
  StartConflictError,
} from '../../src/core/errors.js'
import type { Json } from '../../src/core/json.js'
import type { EventStore } from '../../src/core/ports.js'
import { Registry } from '../../src/core/registry.js'
import type {
  CallerContext,
  Engine,
  StartHooks,
  StartRunArgs,
} from '../../src/runtime/engine-types.js'
import type { WorkerCallbackInput } from '../../src/runtime/options.js'
import { validateSignalEvents } from '../../src/runtime/validate.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'

const NO_MODULES = new Registry([])
const MAX_EVENT_BYTES = 1024 * 1024

/**
 * A small Engine over the memory store: enough to exercise routes, SSE and auth without the
 * real wake loop. Definition `test/echo` appends `run.started` and `echo.step` events; a
 * signal of type `finish` completes the run. It records retry/callback calls for assertions.
 */
export function fakeEngine(store: EventStore = memoryStore()) {
  let clock = 1_000
  const calls: Array<{ method: string; args: unknown[] }> = []
  const subscriptions = { active: 0 }
  const starts = new Map<string, { key?: string; threadId: string }>()

  const envelope = (
    runId: string,
    seq: number,
    input: EventInput,
    origin: EventEnvelope['origin'],
  ) =>
    ({
      id: randomUUID(),
      runId,
      seq,
      ts: clock++,
      type: input.type,
      payload: input.payload ?? null,
      threadId: input.threadId ?? null,
      origin,
    }) satisfies EventEnvelope

  const append = async (
    runId: string,
    inputs: EventInput[],
    origin: EventEnvelope['origin'],
    key?: string,
  ) => {
    const tail = await store.tail(runId)
    const events = inputs.map((input, i) => envelope(runId, tail + i + 1, input, origin))
    await store.append(runId, events, { expectedSeq: tail, idempotencyKey: key })
    return events
  }

  const stateOf = async (runId: string): Promise<RunState> => {
    const events = await store.read(runId)
    if (events.length === 0) throw new RunNotFoundError(`run ${runId} not found`, { runId })
    const started = events[0].payload as { kind: string; definitionName: string; threadId: string }
    const done = events.some((e) => e.type === 'finish')
    return {
      runId,
      status: done ? 'completed' : 'running',
      rootThreadId: started.threadId,
      kind: started.kind,
      definitionName: started.definitionName,
      definitionVersion: '1',
      threads: {},
      lastSeq: events[events.length - 1].seq,
      createdAt: events[0].ts,
      updatedAt: events[events.length - 1].ts,
    }
  }
  const exists = async (runId: string) => {
    if ((await store.tail(runId)) === 0)
      throw new RunNotFoundError(`run ${runId} not found`, { runId })
  }

  const engine: Engine & {
    calls: typeof calls
    subscriptions: typeof subscriptions
    store: Promise<EventStore>
  } = {
    calls,
    subscriptions,
    ready: Object.assign(
      async () => ({ store, runtime: { registry: undefined as never, idle: async () => {} } }),
      {
        // biome-ignore lint/suspicious/noThenProperty: Engine['ready'] is awaitable bare
        then: (ok?: any, failed?: any) => engine.ready().then(ok, failed),
      },
    ) as Engine['ready'],
    start: async (definition, ...[input, options]) =>
      engine.startRun({
        kind: definition.kind,
        definitionName: definition.name,
        input: input as Json,
        ...options,
      }),
    async startRun(args: StartRunArgs, hooks?: StartHooks) {
      calls.push({ method: 'startRun', args: [args] })
      if (args.kind !== 'test' || args.definitionName !== 'echo') {
        throw new DefinitionNotFoundError(`no definition ${args.kind}:${args.definitionName}`)
      }
      const runId = args.runId ?? randomUUID()
      await hooks?.onRunId?.(runId)
      const prior = starts.get(runId)
      if (prior) {
        if (args.idempotencyKey !== undefined && prior.key === args.idempotencyKey) {
          return { runId, threadId: prior.threadId, state: await stateOf(runId) }
        }
        throw new StartConflictError(`run ${runId} already exists`, { runId })
      }
      const threadId = args.threadId ?? randomUUID()
      starts.set(runId, { key: args.idempotencyKey, threadId })
      await append(
        runId,
        [
          {
            type: 'run.started',
            payload: {
              kind: args.kind,
              definitionName: args.definitionName,
              threadId,
              input: args.input ?? null,
            },
          },
        ],
        'runtime',
      )
      // The "wake": two steps appended in separate batches, like a wake with iterations.
      await append(runId, [{ type: 'echo.step', payload: { n: 1 } }], 'runtime')
      await append(runId, [{ type: 'echo.step', payload: { n: 2 } }], 'runtime')
      return { runId, threadId, state: await stateOf(runId) }
    },
    getRun: stateOf,
    async getEvents(runId, options) {
      await exists(runId)
      return store.read(runId, options)
    },
    async signal(runId, events, options) {
      calls.push({ method: 'signal', args: [runId, events, options] })
      // The engine's own validation (HTTP leaves it to the engine), with no module registered.
      await validateSignalEvents(NO_MODULES, events, MAX_EVENT_BYTES)
      await exists(runId)
      try {
        await append(runId, [...events], 'external', options?.idempotencyKey)
      } catch (error) {
        if (!IdempotencyConflictError.is(error)) throw error
      }
      return stateOf(runId)
    },
    wake: stateOf,
    cancel: stateOf,
    listRuns: () => store.listRuns(),
    async listRunSummaries() {
      const ids = await store.listRuns()
      const runs = await Promise.all(
        ids.map(async (runId) => {
          const s = await stateOf(runId)
          return {
            runId,
            status: s.status,
            kind: s.kind,
            definitionName: s.definitionName,
            definitionVersion: '1',
            createdAt: s.createdAt,
            updatedAt: s.updatedAt,
            nextDeadlineAt: null,
          }
        }),
      )
      return { runs, nextCursor: null }
    },
    listDefinitions: async () => [
      { kind: 'test', name: 'echo', defaultVersion: '1', versions: [{ version: '1' }] },
    ],
    async project(runId, projection) {
      await exists(runId)
      if (projection !== 'count')
        throw new ProjectionNotFoundError(`no projection ${String(projection)}`)
      return (await store.read(runId)).length as never
    },
    async replayTo(runId, seq) {
      const events = await store.read(runId)
      if (events.length === 0) throw new RunNotFoundError(`run ${runId} not found`)
      const event = events.find((e) => e.seq === seq)
      if (!event) return null
      const state = await stateOf(runId)
      return { seq, event, before: state, after: state }
    },
    async inspectRun(runId) {
      const s = await stateOf(runId)
      return {
        runId,
        status: s.status,
        threads: [],
        waits: [],
        effects: [],
        deadlines: [],
        head: 1,
        tail: s.lastSeq,
      }
    },
    async listEffects(runId) {
      await exists(runId)
      return []
    },
    async listThreads(runId) {
      await exists(runId)
      return []
    },
    async retryEffect(runId, effectId, caller?: CallerContext) {
      calls.push({ method: 'retryEffect', args: [runId, effectId, caller] })
      await exists(runId)
      if (effectId !== 'e1') throw new EffectNotFoundError(`no effect ${effectId}`)
      await append(runId, [{ type: 'effect.retry', payload: { effectId } }], 'operator')
      return stateOf(runId)
    },
    async workerCallback(runId, input: WorkerCallbackInput) {
      calls.push({ method: 'workerCallback', args: [runId, input] })
      await exists(runId)
      return stateOf(runId)
    },
    rescanTimers: async () => 0,
    recoverDeadlines: async () => {
      calls.push({ method: 'recoverDeadlines', args: [] })
      return 3
    },
    subscribeTransient() {
      return () => {}
    },
    async subscribe(runId, listener) {
      const off = store.subscribe!(runId, listener)
      subscriptions.active++
      let done = false
      return () => {
        if (!done) subscriptions.active--
        done = true
        off()
      }
    },
    fetch: async () => null,
    serve: async () => {
      throw new Error('not in the fake')
    },
    stop: async () => {},
    runtime: Promise.resolve({ registry: undefined as never, idle: async () => {} }),
    store: Promise.resolve(store),
  }
  return engine
}

/** Appends events to a run directly (as another writer would), for SSE tests. */
export async function appendRaw(
  store: EventStore,
  runId: string,
  types: string[],
  payload: Json = null,
) {
  const tail = await store.tail(runId)
  const events = types.map((type, i) => ({
    id: randomUUID(),
    runId,
    seq: tail + i + 1,
    ts: 0,
    type,
    payload,
    threadId: null,
    origin: 'external' as const,
  }))
  await store.append(runId, events, { expectedSeq: tail })
  return events
}
