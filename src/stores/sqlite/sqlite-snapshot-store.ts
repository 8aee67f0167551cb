import type { Snapshot, SnapshotStore } from '../../core/ports.js'
import type { SqliteDatabase } from './driver.js'
import { storeError } from './group-commit.js'

interface SnapshotRow {
  run_id: string
  seq: number
  created_at: number
  format: number
  data: string
}

/** Snapshots in the store's file (table `skein_snapshots`, data as JSON text). */
export function sqliteSnapshotStore(db: SqliteDatabase, guard: () => void): SnapshotStore {
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
  const run = <T>(action: string, fn: () => T): Promise<T> => {
    try {
      guard()
      return Promise.resolve(fn())
    } catch (error) {
      return Promise.reject(storeError(action, error))
    }
  }

  return {
    save: (s: Snapshot) =>
      run('save snapshot', () => {
        save.run(s.runId, s.seq, s.createdAt, s.format, JSON.stringify(s.data))
      }),
    latest: (runId, atOrBefore = Number.MAX_SAFE_INTEGER) =>
      run('read snapshot', () => {
        const row = latest.get(runId, atOrBefore)
        if (!row) return null
        return {
          runId: row.run_id,
          seq: row.seq,
          createdAt: row.created_at,
          format: row.format,
          data: JSON.parse(row.data),
        }
      }),
    list: (runId) => run('list snapshots', () => list.all(runId)),
    prune: (runId, keep) =>
      run('prune snapshots', () => prune.run(runId, runId, Math.max(0, keep)).changes),
  }
}
