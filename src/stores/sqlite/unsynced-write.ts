import type { SqliteDatabase } from './driver.js'

/**
 * Runs `write` (a statement or a write transaction of its own) so that, when `relaxed` (a
 * FULL-sync WAL file), it commits under `synchronous = NORMAL`: its WAL frames are written, so
 * a crash of this process loses nothing, but not fsynced; the store's next FULL commit fsyncs
 * the WAL, which covers them. For writes a power loss may take back: a checkpoint, a claim not
 * yet handed out, a released lease, a cache (decisions.md, "A commit that only starts
 * in-process attempts is fsynced with the next one"). `exec`, not a prepared statement: SQLite
 * applies this pragma when it compiles it.
 */
export function unsyncedWrite<T>(db: SqliteDatabase, relaxed: boolean, write: () => T): T {
  if (!relaxed) return write()
  db.exec('PRAGMA synchronous = NORMAL')
  try {
    return write()
  } finally {
    db.exec('PRAGMA synchronous = FULL')
  }
}
