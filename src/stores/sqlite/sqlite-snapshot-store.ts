import type { Snapshot, SnapshotStore } from '../../core/ports.js'
import type { SqliteDatabase } from './driver.js'
import { guardedCall } from './group-commit.js'

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
 * are only ever trimmed behind a durable snapshot.
 */
export function sqliteSnapshotStore(
  db: SqliteDatabase,
  guard: () => void,
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

  /** Buffered saves by run, ascending seq; `data` is already JSON text. */
  const pending = new Map<
    string,
    Array<{ seq: number; createdAt: number; format: number; text: string }>
  >()
  let timer: NodeJS.Timeout | undefined
  const writeRows = () => {
    for (const [runId, rows] of pending)
      for (const row of rows) save.run(runId, row.seq, row.createdAt, row.format, row.text)
    pending.clear()
  }
  /** Writes the buffer; inside an open transaction (an append's) it joins that transaction. */
  const writePending = (): void => {
    if (timer) {
      clearTimeout(timer)
      timer = undefined
    }
    if (pending.size === 0) return
    if (db.inTransaction) writeRows()
    else db.transaction(writeRows)()
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
  const pendingLatest = (runId: string, atOrBefore: number) => {
    const rows = pending.get(runId)
    if (!rows) return undefined
    for (let i = rows.length - 1; i >= 0; i--) if (rows[i].seq <= atOrBefore) return rows[i]
    return undefined
  }

  return {
    writePending,
    save: (s: Snapshot) =>
      run('save snapshot', () => {
        const rows = pending.get(s.runId) ?? []
        const row = {
          seq: s.seq,
          createdAt: s.createdAt,
          format: s.format,
          text: JSON.stringify(s.data),
        }
        const at = rows.findIndex((r) => r.seq >= s.seq)
        if (at === -1) rows.push(row)
        else if (rows[at].seq === s.seq) rows[at] = row
        else rows.splice(at, 0, row)
        pending.set(s.runId, rows)
        schedule()
      }),
    latest: (runId, atOrBefore = Number.MAX_SAFE_INTEGER) =>
      run('read snapshot', () => {
        const buffered = pendingLatest(runId, atOrBefore)
        const row = latest.get(runId, atOrBefore)
        if (buffered && (!row || buffered.seq >= row.seq)) {
          return {
            runId,
            seq: buffered.seq,
            createdAt: buffered.createdAt,
            format: buffered.format,
            data: JSON.parse(buffered.text),
          }
        }
        if (!row) return null
        return {
          runId: row.run_id,
          seq: row.seq,
          createdAt: row.created_at,
          format: row.format,
          data: JSON.parse(row.data),
        }
      }),
    list: (runId) =>
      run('list snapshots', () => {
        const seqs = new Set<number>(list.all(runId))
        for (const row of pending.get(runId) ?? []) seqs.add(row.seq)
        return [...seqs].sort((a, b) => a - b)
      }),
    prune: (runId, keep) =>
      run('prune snapshots', () => {
        writePending()
        return prune.run(runId, runId, Math.max(0, keep)).changes
      }),
  }
}
