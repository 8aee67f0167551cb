import {
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type EngineOptions,
  type EventStore,
  memoryStore,
  type Worker,
  type WorkerTask,
} from 'skein'
import { type ManualClock, manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { z } from 'zod'

/** Worker effects with each timeout shape; `w.local` runs in process. */
export const workerEffects = defineModule({
  namespace: 'w',
  events: { shipped: z.object({ id: z.string() }) },
  effects: {
    plain: defineEffect({ execution: 'worker', retry: { maxAttempts: 3, backoffMs: 100 } }),
    once: defineEffect({ execution: 'worker', retry: { maxAttempts: 1 } }),
    timed: defineEffect({
      execution: 'worker',
      scheduleToStartMs: 1_000,
      startToCloseMs: 5_000,
      heartbeatMs: 2_000,
      cancellationTimeoutMs: 3_000,
      retry: { maxAttempts: 2, backoffMs: 10 },
    }),
    local: defineEffect({ execute: async () => 'local' }),
    external: defineEffect({}),
  },
})

export const flowOf = (effect: string) =>
  defineWorkflow({
    name: `flow-${effect}`,
    nodes: {
      a: { run: (ctx) => ctx.invoke(effect, { n: 1 }) },
      b: { after: ['a'], run: ({ results }) => ({ got: results.a }) },
    },
  })

export const FLOWS = ['w.plain', 'w.once', 'w.timed', 'w.local', 'w.external'].map(flowOf)

/** A worker that records what it is asked and can be told to fail or to answer cancels. */
export function recordingWorker() {
  const log = {
    dispatched: [] as WorkerTask[],
    cancelled: [] as WorkerTask[],
    failDispatch: false,
    cancelAnswer: undefined as unknown,
  }
  const worker: Worker = {
    dispatch(task) {
      if (log.failDispatch) throw new Error('queue unreachable')
      log.dispatched.push(task)
    },
    cancel(task) {
      log.cancelled.push(task)
      return log.cancelAnswer
    },
  }
  return { worker, log }
}

export interface Harness {
  engine: Engine
  clock: ManualClock
  store: EventStore
  log: ReturnType<typeof recordingWorker>['log']
  /** Event types appended after `seq`. */
  typesAfter(runId: string, seq: number): Promise<string[]>
  tail(runId: string): Promise<number>
  idle(): Promise<void>
}

export function harness(extra: EngineOptions = {}, store: EventStore = memoryStore()): Harness {
  const clock = (extra.clock as ManualClock | undefined) ?? manualClock()
  const { worker, log } = recordingWorker()
  const engine = createEngine({
    modules: [workflow({ definitions: FLOWS }), workerEffects],
    clock,
    store,
    worker,
    ...extra,
  })
  return {
    engine,
    clock,
    store,
    log,
    async typesAfter(runId, seq) {
      return (await engine.getEvents(runId, { fromSeq: seq + 1 })).map((e) => e.type)
    },
    tail: (runId) => store.tail(runId),
    async idle() {
      await (await engine.runtime).idle()
    },
  }
}

/** Starts the flow of `effect` and returns the effectId of its worker effect. */
export async function startFlow(h: Harness, effect: string, runId = 'r1') {
  const flow = FLOWS.find((f) => f.name === `flow-${effect}`)!
  await h.engine.start(flow, undefined, { runId })
  await h.idle()
  const status = await h.engine.inspectRun(runId)
  const record = status.effects.find((e) => e.type === effect)
  return { runId, effectId: record?.effectId ?? '', status }
}

export async function effectOf(h: Harness, runId: string, effectId: string) {
  return (await h.engine.inspectRun(runId)).effects.find((e) => e.effectId === effectId)
}
