import type { Worker, WorkerTask } from '../core/ports.js'

export interface ClaimOptions {
  /** Only tasks of these effect types (all types when absent or empty). */
  types?: readonly string[]
  /** Most tasks to hand out (default 1). */
  max?: number
  /** Long poll: wait up to this long for a first task (default 0: answer at once). */
  waitMs?: number
  /** Ends the wait early (the HTTP request went away). */
  signal?: AbortSignal
}

/**
 * A Worker that queues tasks in memory for workers in other processes to claim over HTTP
 * (`POST /workers/tasks/claim`, access `worker`). `dispatch` enqueues; `cancel` drops a task
 * nobody claimed yet and acknowledges the cancel at once (it never started).
 */
export interface HttpWorkerQueue extends Worker {
  claim(options?: ClaimOptions): Promise<WorkerTask[]>
  /** Tasks waiting to be claimed. */
  readonly size: number
  /** Marks this object as a claimable queue for the HTTP route. */
  readonly claimable: true
}

interface Waiter {
  types: ReadonlySet<string> | null
  wake: () => void
}

const MAX_CLAIM = 100
const MAX_WAIT_MS = 60_000

/**
 * An in-memory pull queue for workers in other processes. Unclaimed tasks are lost when the
 * process stops: give worker effects a `scheduleToStartMs` so such an attempt times out and is
 * dispatched again after a restart.
 *
 * @example
 * const queue = httpWorkerQueue({ handles: ['mail.send'] })
 * const engine = createEngine({ modules, worker: queue, authorize: bearerAuth({ worker: token }) })
 * // elsewhere: POST /workers/tasks/claim { types: ['mail.send'], waitMs: 20000 }
 */
export function httpWorkerQueue(options: { handles?: Worker['handles'] } = {}): HttpWorkerQueue {
  const tasks = new Map<string, WorkerTask>()
  let waiters: Waiter[] = []
  const keyOf = (task: WorkerTask) => `${task.runId}\u0000${task.effectId}\u0000${task.attempt}`
  const matches = (types: ReadonlySet<string> | null, task: WorkerTask) =>
    types === null || types.has(task.type)

  const take = (types: ReadonlySet<string> | null, max: number): WorkerTask[] => {
    const out: WorkerTask[] = []
    for (const [key, task] of tasks) {
      if (out.length >= max) break
      if (!matches(types, task)) continue
      tasks.delete(key)
      out.push(task)
    }
    return out
  }

  const queue: HttpWorkerQueue = {
    claimable: true,
    get size() {
      return tasks.size
    },
    dispatch(task) {
      tasks.set(keyOf(task), task)
      const waiter = waiters.find((w) => matches(w.types, task))
      if (waiter) {
        waiters = waiters.filter((w) => w !== waiter)
        waiter.wake()
      }
    },
    cancel(task) {
      // Not claimed yet: it will never run, so the cancel is acknowledged now.
      return tasks.delete(keyOf(task)) ? 'cancelled' : undefined
    },
    async claim(claim = {}) {
      const types = claim.types && claim.types.length > 0 ? new Set(claim.types) : null
      const max = Math.min(Math.max(1, Math.floor(claim.max ?? 1)), MAX_CLAIM)
      const waitMs = Math.min(Math.max(0, claim.waitMs ?? 0), MAX_WAIT_MS)
      const now = take(types, max)
      if (now.length > 0 || waitMs === 0 || claim.signal?.aborted) return now
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          claim.signal?.removeEventListener('abort', done)
          waiters = waiters.filter((w) => w !== waiter)
          resolve()
        }
        const waiter: Waiter = { types, wake: done }
        // A wall-clock wait: long polling is transport, not a durable deadline.
        const timer = setTimeout(done, waitMs)
        claim.signal?.addEventListener('abort', done)
        waiters.push(waiter)
      })
      return take(types, max)
    },
  }
  if (options.handles) Object.assign(queue, { handles: options.handles })
  return queue
}

export const isClaimable = (worker: unknown): worker is HttpWorkerQueue =>
  typeof worker === 'object' &&
  worker !== null &&
  (worker as HttpWorkerQueue).claimable === true &&
  typeof (worker as HttpWorkerQueue).claim === 'function'
