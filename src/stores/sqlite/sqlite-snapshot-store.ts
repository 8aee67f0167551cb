import type { Snapshot, SnapshotStore } from '../../core/ports.js'
import { newerSnapshot, SnapshotBuffer } from '../shared/snapshot-buffer.js'
import type { SqliteDatabase } from './driver.js'
import { guardedCall } from './group-commit.js'
import { unsyncedWrite } from './unsynced-write.js'

interface SnapshotRow {
  run_id: string
  seq: number
  created_at: number
  format: number
  data: string
}

/**
 * Snapshots in the store's file (table `skein_snapshots`, data as JSON text).
 *
 * Snapshots are a cache of the log, so saves are buffered: they ride in the next append's
 * transaction (sharing its fsync) or are written together a few milliseconds later. Reads see
 * buffered snapshots. A crash can lose a buffered snapshot, never an event: the run then folds
 * from an older snapshot. Pruning (which precedes trimming) writes the buffer first, so events
 * are only ever trimmed behind a durable snapshot. With `relaxed` (a FULL-sync WAL file) a write
 * of the buffer in a transaction of its own commits under `synchronous = NORMAL`: the next FULL
 * commit (the prune's own, an append's) fsyncs its frames (decisions.md, "A worker effect's
 * claim and its `started` park cost no fsync or snapshot").
 */
export function sqliteSnapshotStore(
  db: SqliteDatabase,
  guard: () => void,
  relaxed = false,
): SnapshotStore & { writePending(): void } {
  const save = db.prepare<[string, number, number, number, string]>(
    `INSERT OR REPLACE INTO skein_snapshots (run_id, seq, created_at, format, data)
      VALUES (?, ?, ?, ?, ?)`,
  )
  const latest = db.prepare<[string, number], SnapshotRow>(
    `SELECT * FROM skein_snapshots WHERE run_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1`,
  )
  const list = db
    .prepare<[string], number>('SELECT seq FROM skein_snapshots WHERE run_id = ? ORDER BY seq')
    .pluck()
  const prune = db.prepare<[string, string, number]>(
    `DELETE FROM skein_snapshots WHERE run_id = ? AND seq NOT IN
      (SELECT seq FROM skein_snapshots WHERE run_id = ? ORDER BY seq DESC LIMIT ?)`,
  )
  const run = guardedCall(guard)

  let pending = new SnapshotBuffer()
  let timer: NodeJS.Timeout | undefined
  const writeRows = () => {
    for (const [runId, rows] of pending.runs)
      for (const row of rows) save.run(runId, row.seq, row.createdAt, row.format, row.text)
    pending = new SnapshotBuffer()
  }
  /** Writes the buffer; inside an open transaction (an append's) it joins that transaction. */
  const writePending = (): void => {
    if (timer) {
      clearTimeout(timer)
      timer = undefined
    }
    if (pending.runs.size === 0) return
    if (db.inTransaction) writeRows()
    else unsyncedWrite(db, relaxed, db.transaction(writeRows))
  }
  const schedule = () => {
    timer ??= setTimeout(() => {
      timer = undefined
      try {
        writePending()
      } catch {
        // Lost snapshots only cost a longer fold; the next save or prune retries the buffer.
      }
    }, 5)
    timer.unref?.()
  }
  return {
    writePending,
    save: (s: Snapshot) =>
      run('save snapshot', () => {
        pending.add(s)
        schedule()
      }),
    latest: (runId, atOrBefore = Number.MAX_SAFE_INTEGER) =>
      run('read snapshot', () => {
        const buffered = pending.latest(runId, atOrBefore)
        const row = latest.get(runId, atOrBefore)
        return newerSnapshot(runId, buffered, row)
      }),
    list: (runId) =>
      run('list snapshots', () => {
        const seqs = new Set<number>(list.all(runId))
        for (const row of pending.runs.get(runId) ?? []) seqs.add(row.seq)
        return [...seqs].sort((a, b) => a - b)
      }),
    prune: (runId, keep) =>
      run('prune snapshots', () => {
        writePending()
        return prune.run(runId, runId, Math.max(0, keep)).changes
      }),
  }
}
