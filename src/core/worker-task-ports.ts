import type { Json } from './json.js'

// The store's side of durable worker tasks (docs/workers.md); re-exported by ports.ts.

/** One attempt of an effect handed to a worker. `effectId` is the idempotency key to use. */
export interface WorkerTask {
  runId: string
  effectId: string
  attempt: number
  type: string
  input: Json
  /** The thread that asked (a worker can watch it to notice a cancellation). */
  threadId?: string
  /** When the attempt's schedule-to-start (or start-to-close) deadline passes, if any. */
  deadlineAt?: number | null
}

/** Which attempt of which effect: a worker task's key. */
export interface WorkerTaskKey {
  runId: string
  effectId: string
  attempt: number
}

/**
 * A worker task as the store keeps it (docs/workers.md, "Durable tasks"): from its dispatch
 * until a worker is handed it. `epoch` is bumped by every claim (the claim's fencing token);
 * `claimExpiresAt` 0 means nobody holds it.
 */
export interface StoredWorkerTask {
  task: WorkerTask
  owner: string | null
  epoch: number
  claimExpiresAt: number
  createdAt: number
}

/** What `WorkerTaskStore.claim` takes. */
export interface WorkerTaskClaimQuery {
  /** Only tasks of these effect types; null: any type. */
  types: readonly string[] | null
  max: number
  owner: string
  now: number
  /** When the claim lapses unless its tasks were taken by then (engine clock ms). */
  expiresAt: number
}

/**
 * Worker tasks waiting to be handed to a worker (docs/workers.md, "Durable tasks"), shared by
 * every process on the store. A claim holds a task for one process at a time until it
 * expires; `take` then removes it under that claim, so of two processes that both claimed a
 * task (the first one's claim lapsed) exactly one takes it.
 */
export interface WorkerTaskStore {
  /** Whether other processes see these tasks (a database file or server). */
  readonly shared: boolean
  /** Stores each task unless one with its key is stored already. */
  enqueue(tasks: readonly WorkerTask[], now: number): Promise<void>
  /**
   * Claims up to `max` tasks nobody holds (never claimed, or the claim expired by `now`),
   * oldest first; each is returned with its new epoch. On Postgres rows another host is
   * claiming are skipped (`FOR UPDATE SKIP LOCKED`), never waited for.
   */
  claim(query: WorkerTaskClaimQuery): Promise<StoredWorkerTask[]>
  /** Removes each task still held under that `epoch`; returns the keys removed. */
  take(claims: ReadonlyArray<WorkerTaskKey & { epoch: number }>): Promise<WorkerTaskKey[]>
  /**
   * Removes the task; with `unclaimedAt` only if nobody holds it at that time. True if it
   * was removed.
   */
  remove(key: WorkerTaskKey, options?: { unclaimedAt?: number }): Promise<boolean>
  /** Stored tasks, oldest first (one run's, or all). */
  list(runId?: string): Promise<StoredWorkerTask[]>
  /**
   * Calls `listener` when any process may have stored new tasks (a hint: claim to find out),
   * until the returned function is called. SQLite: another connection's commit seen by a
   * `PRAGMA data_version` poll; Postgres: a NOTIFY on the schema's channel.
   */
  watch(listener: () => void): () => void
}
