import type { RunStatus } from '../../core/envelope.js'
import type { DeletedRun, DeleteRunOptions, FinishedRunsQuery } from '../../core/ports.js'
import type { SqliteDatabase } from './driver.js'
import { keptPositions } from './kept-position.js'
import { lazyStatements } from './statements.js'

interface VictimRow {
  run_no: number
  run_id: string
  tail: number
  status: RunStatus | null
}

export interface SqliteDeletionHost {
  db: SqliteDatabase
  /** Writes buffered snapshots first (inside the deletion's transaction), so none lands after it. */
  writePendingSnapshots(): void
  /** Told each deleted run (the append cache forgets its row). */
  forget(runId: string): void
  /** Told after each committed deletion (the feed drops its cache and wakes its watchers). */
  deleted(): void
}

/**
 * Deleting runs in the SQLite file (docs/data-lifecycle.md): each batch is one IMMEDIATE
 * transaction that removes every row of each run (events, idempotency keys, snapshots, the run
 * row with its lease and meta, wait-URL tokens, durable worker tasks, its flow-control entry) and records each deletion at a new feed
 * position (`skein_deletions`, numbered on from the highest event position, which a keeper row
 * then holds (kept-position.ts), so event positions and deletion positions never collide). The connection runs with `secure_delete`,
 * so freed pages are zeroed, and the WAL is checkpointed and truncated after each batch, so
 * neither file keeps a deleted payload.
 */
export function sqliteDeletion(host: SqliteDeletionHost) {
  const { db } = host
  const st = lazyStatements(db, (lazy) => ({
    byId: lazy.prepare<[string], VictimRow>(
      'SELECT run_no, run_id, tail, status FROM skein_runs WHERE run_id = ?',
    ),
    // Walks the status index in creation order: the oldest runs of a status come first.
    finished: lazy.prepare<[string, number, number], VictimRow>(
      `SELECT run_no, run_id, tail, status FROM skein_runs INDEXED BY skein_runs_status
        WHERE status = ? AND updated_at < ? ORDER BY run_no LIMIT ?`,
    ),
    events: lazy.prepare<[number]>('DELETE FROM skein_events WHERE run_no = ?'),
    keys: lazy.prepare<[string]>('DELETE FROM skein_idempotency WHERE run_id = ?'),
    snapshots: lazy.prepare<[string]>('DELETE FROM skein_snapshots WHERE run_id = ?'),
    waitUrls: lazy.prepare<[string]>('DELETE FROM skein_wait_urls WHERE run_id = ?'),
    workerTasks: lazy.prepare<[string]>('DELETE FROM skein_worker_tasks WHERE run_id = ?'),
    flow: lazy.prepare<[string]>('DELETE FROM skein_flow WHERE run_id = ?'),
    debounce: lazy.prepare<[string]>('DELETE FROM skein_flow_debounce WHERE run_id = ?'),
    run: lazy.prepare<[number]>('DELETE FROM skein_runs WHERE run_no = ?'),
    // A record every stored checkpoint passed is no longer needed (none stored: none is).
    pruneRecords: lazy.prepare<[]>(
      `DELETE FROM skein_deletions WHERE pos <= coalesce(
        (SELECT min(position) FROM skein_projectors), (SELECT max(pos) FROM skein_deletions))`,
    ),
    record: lazy.prepare<[number, string, number, number, string]>(
      'INSERT INTO skein_deletions (pos, run_id, tail, deleted_at, reason) VALUES (?, ?, ?, ?, ?)',
    ),
    checkpoint: lazy.prepare<[]>('PRAGMA wal_checkpoint(TRUNCATE)'),
  }))
  const kept = keptPositions(db)

  const removeAll = (victims: VictimRow[], at: number, reason: string): DeletedRun[] => {
    if (victims.length === 0) return []
    host.writePendingSnapshots()
    st.pruneRecords.run()
    let position = kept.top()
    for (const v of victims) {
      st.events.run(v.run_no)
      st.keys.run(v.run_id)
      st.snapshots.run(v.run_id)
      st.waitUrls.run(v.run_id)
      st.workerTasks.run(v.run_id)
      st.flow.run(v.run_id)
      st.debounce.run(v.run_id)
      st.run.run(v.run_no)
      st.record.run(++position, v.run_id, v.tail, at, reason)
    }
    kept.keep(position)
    return victims.map((v) => ({ runId: v.run_id, tail: v.tail, status: v.status }))
  }

  const deleteOne = db.transaction((runId: string, options: DeleteRunOptions) => {
    const row = st.byId.get(runId)
    if (!row || row.tail === 0) return null
    if (options.statuses && !options.statuses.includes(row.status as RunStatus)) return null
    return removeAll([row], options.at, options.reason)[0]
  })

  const deleteBatch = db.transaction((query: FinishedRunsQuery) => {
    const victims: VictimRow[] = []
    if (query.runs) {
      for (const { runId, tail } of query.runs) {
        const row = st.byId.get(runId)
        if (row && row.tail === tail && query.statuses.includes(row.status as RunStatus)) {
          victims.push(row)
        }
      }
      return removeAll(victims, query.at, query.reason)
    }
    for (const status of query.statuses) {
      const left = query.limit - victims.length
      if (left <= 0) break
      victims.push(...st.finished.all(status, query.updatedBefore, left))
    }
    return removeAll(victims, query.at, query.reason)
  })

  /** Deleted pages leave the WAL too (a busy reader may hold it: the next batch retries). */
  const settle = (deleted: DeletedRun[]) => {
    if (deleted.length === 0) return
    for (const d of deleted) host.forget(d.runId)
    host.deleted()
    st.checkpoint.run()
  }

  return {
    deleteRun(runId: string, options: DeleteRunOptions): DeletedRun | null {
      const deleted = deleteOne.immediate(runId, options)
      settle(deleted ? [deleted] : [])
      return deleted
    },
    deleteFinished(query: FinishedRunsQuery): DeletedRun[] {
      const deleted = deleteBatch.immediate(query)
      settle(deleted)
      return deleted
    },
  }
}
