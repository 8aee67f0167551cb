import type { EventEnvelope } from '../../core/envelope.js'
import type { RecordedKey, TrimmedLog } from '../../core/ports.js'
import { checkTrimmedLog, runHeldError, trimmedTail } from '../shared/trimmed-log.js'
import type { SqliteDatabase } from './driver.js'
import { runAttributeWriter, setsAttributes } from './run-attributes.js'
import {
  eventInserts,
  metaParams,
  metaSetBits,
  newRunParams,
  pushEventParams,
  type Statements,
} from './statements.js'

/** What a restored log tells the store's listeners and feed after its commit. */
export type RestoredCommit = (
  runId: string,
  events: readonly EventEnvelope[],
  lastPosition: number,
  payloadBytes: number,
) => void

/**
 * `restoreTrimmed` of the SQLite store (docs/data-lifecycle.md, "Restoring"): the run's row
 * (meta, head past the snapshot, tail), its events, its snapshot and its attributes in one
 * `BEGIN IMMEDIATE` transaction, only while the file holds no event of the run (a row without
 * events, a lease taken before any append, is reused). The snapshot is written at once, not
 * buffered: a trimmed log is never readable without it.
 */
export function sqliteRestore(db: SqliteDatabase, st: Statements, committed: RestoredCommit) {
  const saveSnapshot = db.prepare<[string, number, number, number, string]>(
    `INSERT OR REPLACE INTO skein_snapshots (run_id, seq, created_at, format, data)
      VALUES (?, ?, ?, ?, ?)`,
  )
  // One row per statement: a restore is rare, and each row's position is its insert's rowid.
  const insertEvent = eventInserts(db)(1)
  const writeAttributes = runAttributeWriter(db)
  const dropAttributes = db.prepare<[number]>('DELETE FROM skein_run_attributes WHERE run_no = ?')
  // A trimmed log's attributes replace what its events set.
  const setAttributes = db.prepare<[number, string]>(
    `INSERT INTO skein_run_attributes (run_no, name, value, is_bool)
      SELECT ?, key, atom, type IN ('true', 'false') FROM json_each(?)
      WHERE type IN ('true', 'false', 'integer', 'real', 'text')`,
  )
  const write = db.transaction((runId: string, log: TrimmedLog, head: number) => {
    const row = st.run.get(runId)
    if (row && row.tail > 0) throw runHeldError(runId, row.tail)
    const { events, meta, snapshot } = log
    const tail = trimmedTail(log)
    let runNo: number
    if (row) {
      runNo = row.run_no
      const bits = metaSetBits(false, true, true, true)
      st.setMeta[bits].run(...metaParams(runNo, tail, meta, undefined, bits))
    } else {
      runNo = Number(st.insertRun.run(...newRunParams(runId, tail, meta)).lastInsertRowid)
    }
    st.setHead.run(head, runNo)
    let position = 0
    let bytes = 0
    for (const event of events) {
      const params: unknown[] = []
      const payload = pushEventParams(params, runNo, event)
      bytes += payload.length
      position = Number(insertEvent.run(...params).lastInsertRowid)
      if (setsAttributes(event, payload)) writeAttributes(runNo, payload)
    }
    const { seq, createdAt, format, data } = snapshot
    saveSnapshot.run(runId, seq, createdAt, format, JSON.stringify(data))
    if (log.attributes) {
      dropAttributes.run(runNo)
      setAttributes.run(runNo, JSON.stringify(log.attributes))
    }
    return { position, bytes }
  })
  return (runId: string, log: TrimmedLog): void => {
    const head = checkTrimmedLog(runId, log)
    const { position, bytes } = write.immediate(runId, log, head)
    committed(runId, log.events, position, bytes)
  }
}

/**
 * A run's recorded append keys (`idempotencyKeys`): listed in seq order, and restored in one
 * transaction, only for a run the file holds events of, each key the run lacks.
 */
export function sqliteKeyRows(db: SqliteDatabase) {
  const list = db.prepare<[string], RecordedKey>(
    `SELECT k.key, k.seq FROM skein_idempotency k JOIN skein_runs r ON r.run_id = k.run_id
      WHERE k.run_id = ? AND r.tail > 0 ORDER BY k.seq, k.key`,
  )
  const held = db.prepare<[string], number>('SELECT tail FROM skein_runs WHERE run_id = ?').pluck()
  const insert = db.prepare<[string, string, number]>(
    'INSERT OR IGNORE INTO skein_idempotency (run_id, key, seq) VALUES (?, ?, ?)',
  )
  const restore = db.transaction((runId: string, keys: readonly RecordedKey[]) => {
    if (!((held.get(runId) ?? 0) > 0)) return
    for (const { key, seq } of keys) insert.run(runId, key, seq)
  })
  return {
    list,
    restore: (runId: string, keys: readonly RecordedKey[]) => restore.immediate(runId, keys),
  }
}
