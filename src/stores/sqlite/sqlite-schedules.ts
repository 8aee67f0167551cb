import type { ScheduleRecord, ScheduleStore, WaitUrlStore } from '../../core/ports.js'
import {
  rowToSchedule,
  rowToWaitUrl,
  type ScheduleRow,
  scheduleParams,
  type WaitUrlRow,
  waitUrlParams,
} from '../shared/schedule-rows.js'
import type { SqliteDatabase } from './driver.js'
import { lazyStatements } from './statements.js'

type Call = <T>(action: string, fn: () => T) => Promise<T>

const COLUMNS = 'name, spec, paused, wake_at, state, version, created_at, updated_at'

/**
 * Schedules and wait URL tokens of a SQLite file (schema v7). Every write is one statement,
 * atomic against the other connections to the file; an update is a compare-and-set on the
 * row's version.
 */
export function sqliteSchedules(
  db: SqliteDatabase,
  call: Call,
): {
  schedules: ScheduleStore
  waitUrls: WaitUrlStore
} {
  const st = lazyStatements(db, (lazy) => ({
    list: lazy.prepare<[], ScheduleRow>(`SELECT ${COLUMNS} FROM skein_schedules ORDER BY name`),
    get: lazy.prepare<[string], ScheduleRow>(
      `SELECT ${COLUMNS} FROM skein_schedules WHERE name = ?`,
    ),
    insert: lazy.prepare(
      `INSERT INTO skein_schedules (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`,
    ),
    update: lazy.prepare(
      `UPDATE skein_schedules SET spec = ?, paused = ?, wake_at = ?, state = ?, version = ?,
        created_at = ?, updated_at = ? WHERE name = ? AND version = ?`,
    ),
    delete: lazy.prepare('DELETE FROM skein_schedules WHERE name = ?'),
    due: lazy.prepare<[number, number], ScheduleRow>(
      `SELECT ${COLUMNS} FROM skein_schedules WHERE paused = 0 AND wake_at IS NOT NULL
        AND wake_at <= ? ORDER BY wake_at LIMIT ?`,
    ),
    nextWake: lazy
      .prepare<[], number | null>(
        'SELECT min(wake_at) FROM skein_schedules WHERE paused = 0 AND wake_at IS NOT NULL',
      )
      .pluck(),
    readMark: lazy.prepare<[], number>('SELECT at FROM skein_schedule_mark WHERE id = 1').pluck(),
    writeMark: lazy.prepare(
      'INSERT INTO skein_schedule_mark (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at',
    ),
    insertUrl: lazy.prepare(
      `INSERT INTO skein_wait_urls (hash, token_id, run_id, thread_id, wait_key, expires_at, options,
        used_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    findUrl: lazy.prepare<[string], WaitUrlRow>('SELECT * FROM skein_wait_urls WHERE hash = ?'),
    useUrl: lazy.prepare(
      'UPDATE skein_wait_urls SET used_at = ? WHERE hash = ? AND used_at IS NULL',
    ),
  }))
  const write = (record: ScheduleRecord, expected: number): boolean => {
    const [name, ...rest] = scheduleParams(record)
    return st.update.run(...rest, name, expected).changes === 1
  }
  const writeAll = db.transaction((writes: ReadonlyArray<readonly [ScheduleRecord, number]>) =>
    writes.map(([record, expected]) => write(record, expected)),
  )
  const schedules: ScheduleStore = {
    list: () => call('list schedules', () => st.list.all().map(rowToSchedule)),
    get: (name) =>
      call(`read schedule ${name}`, () => {
        const row = st.get.get(name)
        return row ? rowToSchedule(row) : null
      }),
    insert: (record) =>
      call(
        `create schedule ${record.name}`,
        () => st.insert.run(...scheduleParams(record)).changes === 1,
      ),
    update: (record, expected) =>
      call(`update schedule ${record.name}`, () => write(record, expected)),
    updateMany: (writes) =>
      call(`update ${writes.length} schedules`, () =>
        writeAll.immediate(writes.map((w) => [w.record, w.expectedVersion] as const)),
      ),
    delete: (name) => call(`delete schedule ${name}`, () => st.delete.run(name).changes === 1),
    due: (until, limit) =>
      call('read due schedules', () => st.due.all(until, limit).map(rowToSchedule)),
    nextWakeAt: () => call('read next schedule', () => st.nextWake.get() ?? null),
    readMark: () => call('read schedule mark', () => st.readMark.get() ?? null),
    writeMark: (at) =>
      call('write schedule mark', () => {
        st.writeMark.run(at)
      }),
  }
  const waitUrls: WaitUrlStore = {
    insert: (record) =>
      call('create wait URL', () => {
        st.insertUrl.run(...waitUrlParams(record))
      }),
    find: (hash) =>
      call('read wait URL', () => {
        const row = st.findUrl.get(hash)
        return row ? rowToWaitUrl(row) : null
      }),
    use: (hash, now) => call('use wait URL', () => st.useUrl.run(now, hash).changes === 1),
  }
  return { schedules, waitUrls }
}
