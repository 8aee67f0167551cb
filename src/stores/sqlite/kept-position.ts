import type { SqliteDatabase } from './driver.js'
import { lazyStatements } from './statements.js'

/**
 * Feed positions are never reused (docs/projectors.md). An event's position is its row's
 * `pos` (an INTEGER PRIMARY KEY without AUTOINCREMENT: decisions.md, "SQLite event positions
 * without AUTOINCREMENT"), which SQLite draws as the highest `pos` + 1; so when the newest
 * events are deleted (a trim to the tail, a run's deletion) or a deletion record takes the next
 * position, a keeper row holds the highest position given. A keeper has run number 0, which no
 * run has: no read of a run, no feed page and no bound sees it. Only the newest one is kept.
 * Every call runs inside the caller's write transaction.
 */
export function keptPositions(db: SqliteDatabase) {
  const st = lazyStatements(db, (lazy) => ({
    top: lazy.prepare<[], number>('SELECT coalesce(max(pos), 0) FROM skein_events').pluck(),
    keep: lazy.prepare<[number, number]>(
      `INSERT INTO skein_events (pos, run_no, seq, id, ts, type, origin, payload)
        VALUES (?, 0, ?, '', 0, '', '', '')`,
    ),
    dropOlder: lazy.prepare<[number]>('DELETE FROM skein_events WHERE run_no = 0 AND seq < ?'),
  }))
  return {
    /** The highest position given so far (an event's, a deletion record's, or a keeper's). */
    top: (): number => st.top.get() as number,
    /** Keeps `pos` as given when no row holds it any more (after deleting events). */
    keep(pos: number): void {
      if ((st.top.get() as number) >= pos) return
      st.keep.run(pos, pos)
      st.dropOlder.run(pos)
    },
  }
}
