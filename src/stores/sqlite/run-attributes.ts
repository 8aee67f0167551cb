import type { EventEnvelope } from '../../core/envelope.js'
import { RT } from '../../core/runtime-events.js'
import type { SqliteDatabase, SqliteStatement } from './driver.js'

/**
 * Whether writing `event`, whose stored payload is `payloadText`, changes its run's rows in
 * `skein_run_attributes`: a start or an attributes change whose payload names `attributes`.
 * Without that key the two statements of `runAttributeWriter` change nothing, so they are not
 * run (a JSON text with the key holds it as `"attributes"`: neither JSON.stringify nor the
 * codec's texts escape letters).
 */
export const setsAttributes = (event: EventEnvelope, payloadText: string): boolean =>
  (event.type === RT.runStarted || event.type === RT.runAttributes) &&
  payloadText.includes('"attributes"')

/**
 * Keeps `skein_run_attributes` from an event's stored payload, as the events table's trigger
 * did until schema 16 (decisions.md, "SQLite run attributes are written by the store, not a
 * trigger"): names set to null go, the others are inserted or replaced. Called in the
 * appending transaction, in event order, for the events `setsAttributes` picks.
 */
export function runAttributeWriter(db: SqliteDatabase): (runNo: number, payload: string) => void {
  let statements: Record<'drop' | 'set', SqliteStatement<[number, string]>> | undefined
  return (runNo, payload) => {
    statements ??= {
      drop: db.prepare(
        `DELETE FROM skein_run_attributes WHERE run_no = ? AND name IN
          (SELECT key FROM json_each(?, '$.attributes') WHERE type = 'null')`,
      ),
      set: db.prepare(
        `INSERT INTO skein_run_attributes (run_no, name, value, is_bool)
          SELECT ?, key, atom, type IN ('true', 'false')
          FROM json_each(?, '$.attributes') WHERE type IN ('true', 'false', 'integer', 'real', 'text')
          ON CONFLICT (run_no, name) DO UPDATE SET value = excluded.value, is_bool = excluded.is_bool`,
      ),
    }
    statements.drop.run(runNo, payload)
    statements.set.run(runNo, payload)
  }
}
