import type { Json } from '../../core/json.js'
import type { ScheduleRecord, WaitUrlRecord } from '../../core/ports.js'

/** A schedule's row as SQLite and Postgres keep it (JSON as text, numbers as integers). */
export interface ScheduleRow {
  name: string
  spec: string
  paused: number | boolean
  wake_at: number | string | null
  state: string
  version: number | string
  created_at: number | string
  updated_at: number | string
}

export const rowToSchedule = (row: ScheduleRow): ScheduleRecord => ({
  name: row.name,
  spec: JSON.parse(row.spec) as Json,
  paused: row.paused === true || row.paused === 1,
  wakeAt: row.wake_at === null ? null : Number(row.wake_at),
  state: JSON.parse(row.state) as Json,
  version: Number(row.version),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
})

/** The columns of a schedule in the order the stores' statements bind them. */
export const scheduleParams = (r: ScheduleRecord) =>
  [
    r.name,
    JSON.stringify(r.spec),
    r.paused ? 1 : 0,
    r.wakeAt,
    JSON.stringify(r.state),
    r.version,
    r.createdAt,
    r.updatedAt,
  ] as const

export interface WaitUrlRow {
  hash: string
  token_id: string
  run_id: string
  thread_id: string
  wait_key: string
  expires_at: number | string
  options: string
  used_at: number | string | null
  created_at: number | string
}

export const rowToWaitUrl = (row: WaitUrlRow): WaitUrlRecord => ({
  hash: row.hash,
  tokenId: row.token_id,
  runId: row.run_id,
  threadId: row.thread_id,
  waitKey: row.wait_key,
  expiresAt: Number(row.expires_at),
  options: JSON.parse(row.options) as Json,
  usedAt: row.used_at === null ? null : Number(row.used_at),
  createdAt: Number(row.created_at),
})

export const waitUrlParams = (r: WaitUrlRecord) =>
  [
    r.hash,
    r.tokenId,
    r.runId,
    r.threadId,
    r.waitKey,
    r.expiresAt,
    JSON.stringify(r.options),
    r.usedAt,
    r.createdAt,
  ] as const
