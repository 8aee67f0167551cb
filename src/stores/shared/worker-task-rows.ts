import type { Json } from '../../core/json.js'
import type { StoredWorkerTask, WorkerTask } from '../../core/ports.js'

/** A worker task's row in SQLite and Postgres (`skein_worker_tasks`). */
export interface WorkerTaskRow {
  run_id: string
  effect_id: string
  attempt: number | string
  type: string
  /** JSON text: `{ input, threadId?, deadlineAt? }`. */
  body: string
  owner: string | null
  epoch: number | string
  claim_expires_at: number | string
  created_at: number | string
  position: number | string
}

export const WORKER_TASK_COLUMNS =
  'run_id, effect_id, attempt, type, body, owner, epoch, claim_expires_at, created_at, position'

/** The task's JSON body: what a worker needs besides its key and type. */
export function taskBody(task: WorkerTask): string {
  const body: { input: Json; threadId?: string; deadlineAt?: number | null } = {
    input: task.input,
  }
  if (task.threadId !== undefined) body.threadId = task.threadId
  if (task.deadlineAt !== undefined) body.deadlineAt = task.deadlineAt
  return JSON.stringify(body)
}

export function rowToWorkerTask(row: WorkerTaskRow): StoredWorkerTask {
  const body = JSON.parse(row.body) as Omit<WorkerTask, 'runId' | 'effectId' | 'attempt' | 'type'>
  return {
    task: {
      runId: row.run_id,
      effectId: row.effect_id,
      attempt: Number(row.attempt),
      type: row.type,
      ...body,
    },
    owner: row.owner,
    epoch: Number(row.epoch),
    claimExpiresAt: Number(row.claim_expires_at),
    createdAt: Number(row.created_at),
  }
}

/** Rows in queue order (a statement's RETURNING order is not defined). */
export function inQueueOrder(rows: WorkerTaskRow[]): StoredWorkerTask[] {
  return rows.sort((a, b) => Number(a.position) - Number(b.position)).map(rowToWorkerTask)
}
