import type { Clock, StoredWorkerTask, Worker, WorkerTask, WorkerTaskStore } from '../core/ports.js'

/** Of the tasks a claim picked: those to hand out, and those whose attempt is over (dropped). */
export interface StartedTasks {
  ready: WorkerTask[]
  stale: WorkerTask[]
}

export interface ClaimOptions {
  /** Only tasks of these effect types (all types when absent or empty). */
  types?: readonly string[]
  /** Most tasks to hand out (default 1). */
  max?: number
  /** Long poll: wait up to this long for a first task (default 0: answer at once). */
  waitMs?: number
  /** Ends the wait early (the HTTP request went away). */
  signal?: AbortSignal
  /**
   * Records the claimed tasks' attempts `started` (the engine's part, docs/workers.md); only
   * `ready` tasks are handed out. Default: every task is ready.
   */
  start?: (tasks: WorkerTask[]) => Promise<StartedTasks>
}

/** What an engine gives its queue at boot: its store's tasks, its clock, its owner id. */
export interface WorkerQueueBinding {
  tasks: WorkerTaskStore
  clock: Clock
  owner: string
}

export interface HttpWorkerQueueOptions {
  handles?: Worker['handles']
  /**
   * How long a claim holds tasks for the process handing them out (default 30 s): if that
   * process dies between claiming and handing out, another takes them once this passes.
   */
  claimTtlMs?: number
  /**
   * How often a long poll looks at the store again even without a hint (default 5 s): for a
   * claim that lapsed on a host that died, or a lost hint. New tasks on any host wake it at
   * once (`WorkerTaskStore.watch`).
   */
  pollMs?: number
}

/**
 * A Worker whose tasks workers in other processes claim over HTTP (`POST /workers/tasks/claim`,
 * access `worker`). `dispatch` stores the task; `cancel` drops a task nobody holds and
 * acknowledges the cancel at once (it never started).
 */
export interface HttpWorkerQueue extends Worker {
  claim(options?: ClaimOptions): Promise<WorkerTask[]>
  /**
   * Stores each task unless one for its attempt is stored already (insert-if-absent): how the
   * engine puts back the task of an attempt recorded `dispatched` whose task a killed host never
   * stored (docs/workers.md, "Durable tasks"). Never a second row for an attempt.
   */
  restore(tasks: readonly WorkerTask[]): Promise<void>
  /** This queue on an engine's store (the engine does this at boot). */
  bind(binding: WorkerQueueBinding): HttpWorkerQueue
  /** Marks this object as a claimable queue for the HTTP route. */
  readonly claimable: true
}

interface Waiter {
  wake: () => void
}

const MAX_CLAIM = 100
const MAX_WAIT_MS = 60_000
const DEFAULT_CLAIM_TTL_MS = 30_000
const DEFAULT_POLL_MS = 5_000

/**
 * A pull queue for workers in other processes. Its tasks live in the engine's store
 * (docs/workers.md, "Durable tasks"): a restart loses none, and any host sharing the store
 * hands out any run's tasks. The engine binds it to its store at boot; unbound, it refuses
 * every call.
 *
 * @example
 * const queue = httpWorkerQueue({ handles: ['mail.send'] })
 * const engine = createEngine({ modules, worker: queue, authorize: bearerAuth({ worker: token }) })
 * // elsewhere: POST /workers/tasks/claim { types: ['mail.send'], waitMs: 20000 }
 */
export function httpWorkerQueue(options: HttpWorkerQueueOptions = {}): HttpWorkerQueue {
  const unbound = () =>
    Promise.reject(
      new Error(
        'httpWorkerQueue: pass it to createEngine({ worker }); its tasks live in the store',
      ),
    )
  const queue: HttpWorkerQueue = {
    claimable: true,
    dispatch: unbound,
    cancel: unbound,
    claim: unbound,
    restore: unbound,
    bind: (binding) => boundQueue(options, binding),
  }
  if (options.handles) Object.assign(queue, { handles: options.handles })
  return queue
}

function boundQueue(options: HttpWorkerQueueOptions, binding: WorkerQueueBinding): HttpWorkerQueue {
  const { tasks, clock, owner } = binding
  const claimTtlMs = options.claimTtlMs ?? DEFAULT_CLAIM_TTL_MS
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS
  let waiters: Waiter[] = []

  /** Hints seen (`WorkerTaskStore.watch`): a claim that raced one looks again before waiting. */
  let hinted = 0
  /** A hint that some host stored tasks: every waiter looks (their types are unknown). */
  const wakeAll = () => {
    hinted++
    const woken = waiters
    waiters = []
    for (const waiter of woken) waiter.wake()
  }
  // The store is watched while any claim runs, so no hint falls between a look and a wait.
  let claiming = 0
  let unwatch: (() => void) | undefined
  const claimStarts = () => {
    if (claiming++ === 0) unwatch = tasks.watch(wakeAll)
  }
  const claimEnds = () => {
    if (--claiming > 0) return
    unwatch?.()
    unwatch = undefined
  }

  /** Claims, lets `start` record the attempts, takes what it may hand out under the claim. */
  const handOut = async (
    types: ReadonlySet<string> | null,
    max: number,
    start: ClaimOptions['start'],
  ): Promise<WorkerTask[]> => {
    const now = clock.now()
    const claimed: StoredWorkerTask[] = await tasks.claim({
      types: types ? [...types] : null,
      max,
      owner,
      now,
      expiresAt: now + claimTtlMs,
    })
    if (claimed.length === 0) return []
    const picked = claimed.map((c) => c.task)
    const { ready, stale } = start ? await start(picked) : { ready: picked, stale: [] }
    await Promise.all(stale.map((task) => tasks.remove(task)))
    const epochOf = new Map(claimed.map((c) => [keyOf(c.task), c.epoch]))
    const taken = await tasks.take(
      ready.map((task) => ({
        runId: task.runId,
        effectId: task.effectId,
        attempt: task.attempt,
        epoch: epochOf.get(keyOf(task)) ?? -1,
      })),
    )
    const won = new Set(taken.map(keyOf))
    return ready.filter((task) => won.has(keyOf(task)))
  }

  const dispatches = new DispatchGroups(tasks, clock)

  const queue: HttpWorkerQueue = {
    claimable: true,
    // In process memory a store call costs no write: the task is stored at once.
    dispatch: (task) => (tasks.shared ? dispatches.add(task) : tasks.enqueue([task], clock.now())),
    async cancel(task) {
      // Not stored yet, or stored and nobody holds it: it will never run, so the cancel is
      // acknowledged now.
      if (dispatches.drop(task)) return 'cancelled'
      return (await tasks.remove(task, { unclaimedAt: clock.now() })) ? 'cancelled' : undefined
    },
    async claim(claim = {}) {
      const types = claim.types && claim.types.length > 0 ? new Set(claim.types) : null
      const max = Math.min(Math.max(1, Math.floor(claim.max ?? 1)), MAX_CLAIM)
      const waitMs = Math.min(Math.max(0, claim.waitMs ?? 0), MAX_WAIT_MS)
      if (waitMs === 0) return handOut(types, max, claim.start)
      // A wall-clock wait: long polling is transport, not a durable deadline.
      const until = Date.now() + waitMs
      claimStarts()
      try {
        for (;;) {
          const seen = hinted
          const out = await handOut(types, max, claim.start)
          const left = until - Date.now()
          if (out.length > 0 || left <= 0 || claim.signal?.aborted) return out
          if (hinted !== seen) continue
          await waitForHint(Math.min(left, pollMs), claim.signal)
        }
      } finally {
        claimEnds()
      }
    },
    restore: (list) => (list.length > 0 ? tasks.enqueue(list, clock.now()) : Promise.resolve()),
    bind: (next) => boundQueue(options, next),
  }

  const waitForHint = (ms: number, signal: AbortSignal | undefined) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', done)
        waiters = waiters.filter((w) => w !== waiter)
        resolve()
      }
      const waiter: Waiter = { wake: done }
      const timer = setTimeout(done, ms)
      signal?.addEventListener('abort', done)
      waiters.push(waiter)
    })

  if (options.handles) Object.assign(queue, { handles: options.handles })
  return queue
}

const keyOf = (task: { runId: string; effectId: string; attempt: number }) =>
  `${task.runId}\u0000${task.effectId}\u0000${task.attempt}`

interface PendingDispatch {
  task: WorkerTask
  /** Every dispatch of this attempt in the turn (the same attempt twice: one row, both settle). */
  waiters: Array<{ resolve: () => void; reject: (error: unknown) => void }>
}

/**
 * Dispatches of one event-loop turn stored together (docs/workers.md, "Durable tasks"): one
 * `enqueue` per turn, so on SQLite one transaction and fsync, on Postgres one statement and
 * commit, and one hint to waiting claims for the whole group, instead of one of each per
 * effect. Only for a store other processes share (a database): in memory each is stored at
 * once, as waiting a turn would only hold every dispatching pass open longer. Flushed from setImmediate, as the stores' group commits are: the runs whose commits
 * dispatched them resolved in the same turn. Each dispatch settles with its group's enqueue.
 */
class DispatchGroups {
  private pending = new Map<string, PendingDispatch>()
  private scheduled = false

  constructor(
    private readonly tasks: WorkerTaskStore,
    private readonly clock: Clock,
  ) {}

  add(task: WorkerTask): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const key = keyOf(task)
      const pending = this.pending.get(key)
      if (pending) pending.waiters.push({ resolve, reject })
      else this.pending.set(key, { task, waiters: [{ resolve, reject }] })
      if (this.scheduled) return
      this.scheduled = true
      setImmediate(() => this.flush())
    })
  }

  /** A task not stored yet leaves the group: true if it was pending (its dispatch resolves). */
  drop(task: WorkerTask): boolean {
    const key = keyOf(task)
    const dropped = this.pending.get(key)
    if (!dropped) return false
    this.pending.delete(key)
    for (const waiter of dropped.waiters) waiter.resolve()
    return true
  }

  private flush(): void {
    this.scheduled = false
    const group = [...this.pending.values()]
    this.pending = new Map()
    if (group.length === 0) return
    let stored: Promise<void>
    try {
      stored = this.tasks.enqueue(
        group.map((p) => p.task),
        this.clock.now(),
      )
    } catch (error) {
      stored = Promise.reject(error)
    }
    stored.then(
      () => {
        for (const p of group) for (const waiter of p.waiters) waiter.resolve()
      },
      (error) => {
        for (const p of group) for (const waiter of p.waiters) waiter.reject(error)
      },
    )
  }
}

export const isClaimable = (worker: unknown): worker is HttpWorkerQueue =>
  typeof worker === 'object' &&
  worker !== null &&
  (worker as HttpWorkerQueue).claimable === true &&
  typeof (worker as HttpWorkerQueue).claim === 'function'
