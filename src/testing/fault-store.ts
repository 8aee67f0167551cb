import { StoreError } from '../core/errors.js'
import type { EventStore, SnapshotStore } from '../core/ports.js'
import { storeCapabilities } from '../core/store-capabilities.js'

export type FaultMethod =
  | 'append'
  | 'read'
  | 'tail'
  | 'bounds'
  | 'listRuns'
  | 'trim'
  | 'listSummaries'
  | 'listRunsWithDeadlines'
  | 'flush'
  | 'snapshots.save'
  | 'snapshots.latest'
  | 'snapshots.list'
  | 'snapshots.prune'

/**
 * `'before'`: the call fails and has no effect. `'after'`: the call took effect (the append
 * is durable, the snapshot saved) but the caller sees an error, as after a lost reply.
 */
export type FaultWhen = 'before' | 'after'

export interface StoreCall {
  method: FaultMethod
  args: readonly unknown[]
  /** 1-based count of faultable calls through this wrapper, across all methods. */
  index: number
}

export type FaultDecision =
  | FaultWhen
  | { when: FaultWhen; error?: unknown }
  | null
  | undefined
  | false

/** Decides, per call, whether to inject a fault. */
export type FaultPlan = (call: StoreCall) => FaultDecision

export interface InjectedFault {
  method: FaultMethod
  when: FaultWhen
  index: number
}

export interface FailNextOptions {
  /** How many matching calls fail; default 1. */
  times?: number
  /** Only calls for this run (the first argument, or the snapshot's runId). */
  runId?: string
  /** The error to throw; default a StoreError with `details.injected === true`. */
  error?: unknown
}

export interface FaultyStore extends EventStore {
  readonly inner: EventStore
  /** Makes the next matching call(s) fail; `'*'` matches every faultable method. */
  failNext(method: FaultMethod | '*', when?: FaultWhen, options?: FailNextOptions): this
  /** Replaces the plan consulted after the `failNext` rules. */
  failWhen(plan: FaultPlan | undefined): this
  /** Drops every pending rule and the plan: calls pass through again. */
  heal(): this
  /** Every fault injected so far, in order. */
  readonly injected: readonly InjectedFault[]
}

/** True for the default error a FaultyStore throws. */
export function isInjectedFault(error: unknown): boolean {
  return StoreError.is(error) && (error.details as { injected?: unknown })?.injected === true
}

interface Rule {
  method: FaultMethod | '*'
  when: FaultWhen
  left: number
  runId?: string
  error?: unknown
}

/**
 * Wraps a store so any call can fail before or after it takes effect: the tool for proving
 * that the engine survives a store that errors mid-operation or loses a reply.
 * `subscribe` and `close` always pass through. When the inner call itself fails, its own
 * error wins (a planned 'after' fault is still used up).
 *
 * @example
 * const store = faultyStore(memoryStore())
 * store.failNext('append', 'after') // the next append is durable but reports an error
 */
export function faultyStore(inner: EventStore, plan?: FaultPlan): FaultyStore {
  let rules: Rule[] = []
  let currentPlan = plan
  let index = 0
  const injected: InjectedFault[] = []

  const runIdOf = (method: FaultMethod, args: readonly unknown[]) =>
    method === 'snapshots.save'
      ? (args[0] as { runId?: string } | undefined)?.runId
      : typeof args[0] === 'string'
        ? args[0]
        : undefined

  const decide = (call: StoreCall): { when: FaultWhen; error?: unknown } | undefined => {
    const runId = runIdOf(call.method, call.args)
    const rule = rules.find(
      (r) =>
        (r.method === '*' || r.method === call.method) &&
        (r.runId === undefined || r.runId === runId),
    )
    if (rule) {
      if (--rule.left <= 0) rules = rules.filter((r) => r !== rule)
      return { when: rule.when, error: rule.error }
    }
    const decision = currentPlan?.(call)
    if (!decision) return undefined
    return typeof decision === 'string' ? { when: decision } : decision
  }

  const wrap =
    <A extends unknown[], R>(method: FaultMethod, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const call: StoreCall = { method, args, index: ++index }
      const fault = decide(call)
      const fail = (when: FaultWhen): never => {
        injected.push({ method, when, index: call.index })
        throw (
          fault?.error ??
          new StoreError(`injected fault: ${method} failed ${when} it took effect`, {
            injected: true,
            method,
            when,
            index: call.index,
          })
        )
      }
      if (fault?.when === 'before') fail('before')
      const result = await fn(...args)
      if (fault?.when === 'after') fail('after')
      return result
    }

  const has = storeCapabilities(inner, 'faultyStore')
  const snapshots = has.snapshots ? wrapSnapshots(inner.snapshots!, wrap) : undefined
  const store: FaultyStore = {
    inner,
    // Schedules, wait URLs, flow queues, worker tasks and deletion are not what it faults: the
    // wrapper leaves them out (the engine keeps schedules, wait URLs and tasks in memory).
    capabilities: {
      ...has,
      schedules: false,
      waitUrls: false,
      flow: false,
      workerTasks: false,
      deleteRun: false,
      deleteFinished: false,
      countActiveRuns: false,
      restoreTrimmed: false,
      idempotencyKeys: false,
    },
    append: wrap('append', inner.append.bind(inner)),
    read: wrap('read', inner.read.bind(inner)),
    tail: wrap('tail', inner.tail.bind(inner)),
    bounds: wrap('bounds', inner.bounds.bind(inner)),
    listRuns: wrap('listRuns', inner.listRuns.bind(inner)),
    ...(has.trim && { trim: wrap('trim', inner.trim!.bind(inner)) }),
    ...(has.subscribe && { subscribe: inner.subscribe!.bind(inner) }),
    ...(has.summaries && {
      listSummaries: wrap('listSummaries', inner.listSummaries!.bind(inner)),
    }),
    ...(has.deadlines && {
      listRunsWithDeadlines: wrap(
        'listRunsWithDeadlines',
        inner.listRunsWithDeadlines!.bind(inner),
      ),
    }),
    ...(has.flush && { flush: wrap('flush', inner.flush!.bind(inner)) }),
    ...(snapshots && { snapshots }),
    // Ownership, claims and the projection feed pass through unfaulted: the faults are the log's.
    ...(has.leases && { leases: inner.leases }),
    ...(has.claims && { claims: inner.claims }),
    ...(has.feed && { feed: inner.feed }),
    ...(inner.close && { close: inner.close.bind(inner) }),
    failNext(method, when = 'before', options = {}) {
      const times = options.times ?? 1
      if (times > 0) rules.push({ method, when, left: times, ...options })
      return store
    },
    failWhen(next) {
      currentPlan = next
      return store
    },
    heal() {
      rules = []
      currentPlan = undefined
      return store
    },
    injected,
  }
  return store
}

function wrapSnapshots(
  inner: SnapshotStore,
  wrap: <A extends unknown[], R>(
    method: FaultMethod,
    fn: (...args: A) => Promise<R>,
  ) => (...args: A) => Promise<R>,
): SnapshotStore {
  return {
    save: wrap('snapshots.save', inner.save.bind(inner)),
    latest: wrap('snapshots.latest', inner.latest.bind(inner)),
    list: wrap('snapshots.list', inner.list.bind(inner)),
    prune: wrap('snapshots.prune', inner.prune.bind(inner)),
  }
}
