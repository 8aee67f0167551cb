import type { ScheduleStore, WaitUrlStore } from '../../core/ports.js'
import {
  rowToSchedule,
  rowToWaitUrl,
  scheduleParams,
  waitUrlParams,
} from '../shared/schedule-rows.js'

type Read = (action: string, text: string, params: unknown[]) => Promise<any[]>

const COLUMNS = 'name, spec, paused, wake_at, state, version, created_at, updated_at'

/**
 * Schedules and wait URL tokens in a Postgres schema (migration v7). Single statements, each
 * atomic across hosts; an update is a compare-and-set on the row's version.
 */
export function postgresSchedules(
  s: string,
  read: Read,
): { schedules: ScheduleStore; waitUrls: WaitUrlStore } {
  const sql = {
    list: `SELECT ${COLUMNS} FROM ${s}.skein_schedules ORDER BY name`,
    get: `SELECT ${COLUMNS} FROM ${s}.skein_schedules WHERE name = $1`,
    insert: `INSERT INTO ${s}.skein_schedules (${COLUMNS})
      VALUES ($1, $2, $3 = 1, $4, $5, $6, $7, $8) ON CONFLICT (name) DO NOTHING RETURNING name`,
    update: `UPDATE ${s}.skein_schedules SET spec = $2, paused = $3 = 1, wake_at = $4, state = $5,
        version = $6, created_at = $7, updated_at = $8
      WHERE name = $1 AND version = $9 RETURNING name`,
    updateMany: `UPDATE ${s}.skein_schedules AS t SET spec = u.spec, paused = u.paused = 1,
        wake_at = u.wake_at, state = u.state, version = u.version, created_at = u.created_at,
        updated_at = u.updated_at
      FROM json_to_recordset($1::json) AS u(name text, spec text, paused integer, wake_at bigint,
        state text, version bigint, created_at bigint, updated_at bigint, expected bigint)
      WHERE t.name = u.name AND t.version = u.expected RETURNING t.name`,
    delete: `DELETE FROM ${s}.skein_schedules WHERE name = $1 RETURNING name`,
    due: `SELECT ${COLUMNS} FROM ${s}.skein_schedules
      WHERE NOT paused AND wake_at IS NOT NULL AND wake_at <= $1 ORDER BY wake_at LIMIT $2`,
    nextWake: `SELECT min(wake_at) AS at FROM ${s}.skein_schedules
      WHERE NOT paused AND wake_at IS NOT NULL`,
    readMark: `SELECT at FROM ${s}.skein_schedule_mark WHERE id = 1`,
    writeMark: `INSERT INTO ${s}.skein_schedule_mark (id, at) VALUES (1, $1)
      ON CONFLICT (id) DO UPDATE SET at = greatest(${s}.skein_schedule_mark.at, excluded.at)`,
    insertUrl: `INSERT INTO ${s}.skein_wait_urls (hash, token_id, run_id, thread_id, wait_key,
        expires_at, options, used_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    findUrl: `SELECT * FROM ${s}.skein_wait_urls WHERE hash = $1`,
    useUrl: `UPDATE ${s}.skein_wait_urls SET used_at = $1 WHERE hash = $2 AND used_at IS NULL
      RETURNING hash`,
  }
  const schedules: ScheduleStore = {
    list: async () => (await read('list schedules', sql.list, [])).map(rowToSchedule),
    async get(name) {
      const [row] = await read(`read schedule ${name}`, sql.get, [name])
      return row ? rowToSchedule(row) : null
    },
    insert: async (record) =>
      (await read(`create schedule ${record.name}`, sql.insert, [...scheduleParams(record)]))
        .length === 1,
    update: async (record, expected) =>
      (
        await read(`update schedule ${record.name}`, sql.update, [
          ...scheduleParams(record),
          expected,
        ])
      ).length === 1,
    async updateMany(writes) {
      if (writes.length === 0) return []
      const rows = writes.map(({ record, expectedVersion }) => {
        const [name, spec, paused, wake_at, state, version, created_at, updated_at] =
          scheduleParams(record)
        const row = { name, spec, paused, wake_at, state, version, created_at, updated_at }
        return { ...row, expected: expectedVersion }
      })
      const done = await read(`update ${writes.length} schedules`, sql.updateMany, [
        JSON.stringify(rows),
      ])
      const written = new Set(done.map((r: { name: string }) => r.name))
      return writes.map(({ record }) => written.has(record.name))
    },
    delete: async (name) =>
      (await read(`delete schedule ${name}`, sql.delete, [name])).length === 1,
    due: async (until, limit) =>
      (await read('read due schedules', sql.due, [until, limit])).map(rowToSchedule),
    async nextWakeAt() {
      const [row] = await read('read next schedule', sql.nextWake, [])
      return row?.at === null || row?.at === undefined ? null : Number(row.at)
    },
    async readMark() {
      const [row] = await read('read schedule mark', sql.readMark, [])
      return row ? Number(row.at) : null
    },
    async writeMark(at) {
      await read('write schedule mark', sql.writeMark, [at])
    },
  }
  const waitUrls: WaitUrlStore = {
    async insert(record) {
      await read('create wait URL', sql.insertUrl, [...waitUrlParams(record)])
    },
    async find(hash) {
      const [row] = await read('read wait URL', sql.findUrl, [hash])
      return row ? rowToWaitUrl(row) : null
    },
    use: async (hash, now) => (await read('use wait URL', sql.useUrl, [now, hash])).length === 1,
  }
  return { schedules, waitUrls }
}
