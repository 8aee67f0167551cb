import type { WorkerTaskStore } from '../../core/ports.js'
import {
  inQueueOrder,
  taskBody,
  WORKER_TASK_COLUMNS,
  type WorkerTaskRow,
} from '../shared/worker-task-rows.js'
import { WORKER_TASKS_HINT } from './change-feed.js'

type Read = (action: string, text: string, params: unknown[]) => Promise<any[]>

/**
 * Worker tasks on a Postgres schema (migration 9). Every call is one statement; a claim locks
 * the rows it picks and skips rows another host's claim is locking (`FOR UPDATE SKIP LOCKED`),
 * so concurrent claims on several hosts never wait for each other or pick the same row. An
 * enqueue notifies the schema's channel: `watch` hears it on every host.
 */
export function postgresWorkerTasks(
  s: string,
  read: Read,
  hints: { channel: string; watch: (listener: () => void) => () => void },
): WorkerTaskStore {
  const table = `${s}.skein_worker_tasks`
  const sql = {
    // The NOTIFY wakes waiting claims on every host (change-feed.ts, WORKER_TASKS_HINT).
    enqueue: `WITH added AS (
        INSERT INTO ${table} (run_id, effect_id, attempt, type, body, created_at)
        SELECT u.run_id, u.effect_id, u.attempt, u.type, u.body, $6::bigint
        FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[]) WITH ORDINALITY
          AS u(run_id, effect_id, attempt, type, body, n)
        ORDER BY u.n
        ON CONFLICT (run_id, effect_id, attempt) DO NOTHING
        RETURNING 1)
      SELECT pg_notify($7, $8) WHERE EXISTS (SELECT 1 FROM added)`,
    claim: `UPDATE ${table} t SET owner = $1, epoch = t.epoch + 1, claim_expires_at = $3::bigint
      FROM (SELECT run_id, effect_id, attempt FROM ${table}
        WHERE claim_expires_at <= $2::bigint AND ($4::text[] IS NULL OR type = ANY($4::text[]))
        ORDER BY position LIMIT $5 FOR UPDATE SKIP LOCKED) picked
      WHERE t.run_id = picked.run_id AND t.effect_id = picked.effect_id
        AND t.attempt = picked.attempt
      RETURNING ${WORKER_TASK_COLUMNS.split(', ')
        .map((c) => `t.${c}`)
        .join(', ')}`,
    take: `DELETE FROM ${table} t USING unnest($1::text[], $2::text[], $3::int[], $4::bigint[])
        AS c(run_id, effect_id, attempt, epoch)
      WHERE t.run_id = c.run_id AND t.effect_id = c.effect_id AND t.attempt = c.attempt
        AND t.epoch = c.epoch
      RETURNING t.run_id, t.effect_id, t.attempt`,
    remove: `DELETE FROM ${table} WHERE run_id = $1 AND effect_id = $2 AND attempt = $3
      AND ($4::bigint IS NULL OR claim_expires_at <= $4::bigint) RETURNING run_id`,
    listAll: `SELECT ${WORKER_TASK_COLUMNS} FROM ${table} ORDER BY position`,
    listRun: `SELECT ${WORKER_TASK_COLUMNS} FROM ${table} WHERE run_id = $1 ORDER BY position`,
  }
  return {
    shared: true,
    async enqueue(tasks, now) {
      if (tasks.length === 0) return
      await read(`enqueue ${tasks.length} worker task(s)`, sql.enqueue, [
        tasks.map((t) => t.runId),
        tasks.map((t) => t.effectId),
        tasks.map((t) => t.attempt),
        tasks.map((t) => t.type),
        tasks.map(taskBody),
        now,
        hints.channel,
        WORKER_TASKS_HINT,
      ])
    },
    async claim({ types, max, owner, now, expiresAt }) {
      const rows = await read('claim worker tasks', sql.claim, [owner, now, expiresAt, types, max])
      return inQueueOrder(rows as WorkerTaskRow[])
    },
    async take(claims) {
      if (claims.length === 0) return []
      const rows = await read(`take ${claims.length} worker task(s)`, sql.take, [
        claims.map((c) => c.runId),
        claims.map((c) => c.effectId),
        claims.map((c) => c.attempt),
        claims.map((c) => c.epoch),
      ])
      return rows.map((row) => ({
        runId: row.run_id,
        effectId: row.effect_id,
        attempt: Number(row.attempt),
      }))
    },
    async remove({ runId, effectId, attempt }, options = {}) {
      const rows = await read(`remove worker task ${runId}/${effectId}#${attempt}`, sql.remove, [
        runId,
        effectId,
        attempt,
        options.unclaimedAt ?? null,
      ])
      return rows.length > 0
    },
    async list(runId) {
      const rows =
        runId === undefined
          ? await read('list worker tasks', sql.listAll, [])
          : await read('list worker tasks', sql.listRun, [runId])
      return inQueueOrder(rows as WorkerTaskRow[])
    },
    watch: (listener) => hints.watch(listener),
  }
}
