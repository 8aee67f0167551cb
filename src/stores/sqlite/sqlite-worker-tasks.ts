import type { WorkerTask, WorkerTaskKey, WorkerTaskStore } from '../../core/ports.js'
import { hintListeners } from '../shared/hint-listeners.js'
import {
  inQueueOrder,
  taskBody,
  WORKER_TASK_COLUMNS,
  type WorkerTaskRow,
} from '../shared/worker-task-rows.js'
import type { SqliteDatabase } from './driver.js'
import { lazyStatements } from './statements.js'
import { unsyncedWrite } from './unsynced-write.js'

type Call = <T>(action: string, fn: () => T) => Promise<T>

/**
 * Worker tasks of a SQLite file (schema v9). A claim is one statement (SQLite has one writer
 * at a time, so two connections never claim the same row at once); `enqueue` and `take` write
 * their whole list in one transaction. With `relaxed` (a FULL-sync WAL file) a claim commits
 * under `synchronous = NORMAL`: nothing is handed out before a FULL commit that follows it (the
 * attempts' `started` append, a stale task's removal, the take), which fsyncs its frames too;
 * a claim lost to a power cut only never happened (decisions.md, "A worker effect's claim and
 * its `started` park cost no fsync or snapshot"). `watch` hears this connection's own enqueues
 * at once and, while anyone watches, looks every `pollMs` for tasks other connections stored
 * (`PRAGMA data_version` moves only when another connection committed).
 */
export function sqliteWorkerTasks(
  db: SqliteDatabase,
  call: Call,
  /** How often to look for other connections' tasks while watched (0: never). */
  pollMs: number,
  isClosed: () => boolean,
  relaxed = false,
): WorkerTaskStore {
  const st = lazyStatements(db, (lazy) => ({
    insert: lazy.prepare(
      `INSERT INTO skein_worker_tasks (run_id, effect_id, attempt, type, body, created_at)
        VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, effect_id, attempt) DO NOTHING`,
    ),
    claim: lazy.prepare<
      [{ types: string | null; max: number; owner: string; now: number; expiresAt: number }],
      WorkerTaskRow
    >(
      `UPDATE skein_worker_tasks SET owner = @owner, epoch = epoch + 1, claim_expires_at = @expiresAt
        WHERE position IN (SELECT position FROM skein_worker_tasks
          WHERE claim_expires_at <= @now
            AND (@types IS NULL OR type IN (SELECT value FROM json_each(@types)))
          ORDER BY position LIMIT @max)
        RETURNING ${WORKER_TASK_COLUMNS}`,
    ),
    take: lazy.prepare<[string, string, number, number], Pick<WorkerTaskRow, 'run_id'>>(
      `DELETE FROM skein_worker_tasks WHERE run_id = ? AND effect_id = ? AND attempt = ? AND epoch = ?
        RETURNING run_id`,
    ),
    remove: lazy.prepare<[string, string, number]>(
      'DELETE FROM skein_worker_tasks WHERE run_id = ? AND effect_id = ? AND attempt = ?',
    ),
    removeFree: lazy.prepare<[string, string, number, number]>(
      `DELETE FROM skein_worker_tasks WHERE run_id = ? AND effect_id = ? AND attempt = ?
        AND claim_expires_at <= ?`,
    ),
    listAll: lazy.prepare<[], WorkerTaskRow>(
      `SELECT ${WORKER_TASK_COLUMNS} FROM skein_worker_tasks ORDER BY position`,
    ),
    dataVersion: lazy.prepare<[], number>('PRAGMA data_version').pluck(),
    lastPosition: lazy
      .prepare<[], number>('SELECT coalesce(max(position), 0) FROM skein_worker_tasks')
      .pluck(),
    listRun: lazy.prepare<[string], WorkerTaskRow>(
      `SELECT ${WORKER_TASK_COLUMNS} FROM skein_worker_tasks WHERE run_id = ? ORDER BY position`,
    ),
  }))
  const enqueueAll = db.transaction((tasks: readonly WorkerTask[], now: number) => {
    for (const task of tasks)
      st.insert.run(task.runId, task.effectId, task.attempt, task.type, taskBody(task), now)
  })
  const takeAll = db.transaction(
    (claims: ReadonlyArray<WorkerTaskKey & { epoch: number }>): WorkerTaskKey[] => {
      const taken: WorkerTaskKey[] = []
      for (const { runId, effectId, attempt, epoch } of claims) {
        if (st.take.get(runId, effectId, attempt, epoch)) taken.push({ runId, effectId, attempt })
      }
      return taken
    },
  )
  let timer: ReturnType<typeof setInterval> | undefined
  let seen = { version: -1, position: -1 }
  const look = () =>
    call('look for worker tasks', () => {
      const version = st.dataVersion.get() as number
      if (version === seen.version) return
      const position = st.lastPosition.get() as number
      const grew = position > seen.position
      seen = { version, position }
      if (grew) hints.notify()
    }).catch(() => {
      // A busy file tries again next tick; a closed store stops looking.
      if (isClosed()) stopLooking()
    })
  const stopLooking = () => {
    clearInterval(timer)
    timer = undefined
  }
  const hints = hintListeners({
    first() {
      seen = { version: -1, position: -1 }
      if (pollMs <= 0) return
      void look()
      timer = setInterval(look, pollMs)
      timer.unref?.()
    },
    last: stopLooking,
  })
  return {
    shared: true,
    enqueue: (tasks, now) =>
      call(`enqueue ${tasks.length} worker task(s)`, () => {
        if (tasks.length === 0) return
        enqueueAll.immediate(tasks, now)
        hints.notify()
      }),
    claim: ({ types, max, owner, now, expiresAt }) =>
      call('claim worker tasks', () => {
        const params = { types: types ? JSON.stringify(types) : null, max, owner, now, expiresAt }
        return inQueueOrder(unsyncedWrite(db, relaxed, () => st.claim.all(params)))
      }),
    take: (claims) =>
      call(`take ${claims.length} worker task(s)`, () =>
        claims.length > 0 ? takeAll.immediate(claims) : [],
      ),
    remove: (key, options = {}) =>
      call(`remove worker task ${key.runId}/${key.effectId}#${key.attempt}`, () => {
        const { runId, effectId, attempt } = key
        const result =
          options.unclaimedAt === undefined
            ? st.remove.run(runId, effectId, attempt)
            : st.removeFree.run(runId, effectId, attempt, options.unclaimedAt)
        return result.changes > 0
      }),
    list: (runId) =>
      call('list worker tasks', () =>
        inQueueOrder(runId === undefined ? st.listAll.all() : st.listRun.all(runId)),
      ),
    watch: (listener) => hints.watch(listener),
  }
}
