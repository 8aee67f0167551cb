import type { Json } from './json.js'

// The store's side of schedules and wait URLs (docs/schedules.md); re-exported by ports.ts.

/**
 * A schedule as the store keeps it (docs/schedules.md). `spec` and `state` are JSON the
 * runtime owns; the store reads only the columns it indexes: `paused` and `wakeAt`.
 */
export interface ScheduleRecord {
  name: string
  /** The schedule's definition in its JSON form (cron or every, time zone, start, policies). */
  spec: Json
  paused: boolean
  /** When the ticker must look at this schedule next (engine clock ms); null: never (paused). */
  wakeAt: number | null
  /** The ticker's progress: the next tick, a buffered tick, the last runs, counters. */
  state: Json
  /** Bumped by every write; `update` is a compare-and-set on it. */
  version: number
  createdAt: number
  updatedAt: number
}

/** One compare-and-set of `ScheduleStore.updateMany`. */
export interface ScheduleWrite {
  record: ScheduleRecord
  expectedVersion: number
}

/**
 * Schedules in the store (docs/schedules.md): rows every process sharing the store reads and
 * writes, so a change on one host is seen by all. Writes are compare-and-set on `version`, so
 * two processes never overwrite each other's change unseen.
 */
export interface ScheduleStore {
  /** Every schedule, by name. */
  list(): Promise<ScheduleRecord[]>
  get(name: string): Promise<ScheduleRecord | null>
  /** Writes a new schedule (its `version` as given); false, and nothing written, if the name is taken. */
  insert(record: ScheduleRecord): Promise<boolean>
  /**
   * Replaces the schedule if its stored version is `expectedVersion` (the record carries the
   * next version); false, and nothing written, otherwise (changed or deleted meanwhile).
   */
  update(record: ScheduleRecord, expectedVersion: number): Promise<boolean>
  /**
   * `update` for many schedules in one transaction (one fsync): the ticker writes a page of
   * due schedules' progress at once. Each write is its own compare-and-set; the answer says,
   * in order, which were written.
   */
  updateMany(writes: readonly ScheduleWrite[]): Promise<boolean[]>
  /** Deletes the schedule; false if there was none. */
  delete(name: string): Promise<boolean>
  /** Unpaused schedules with `wakeAt <= until`, earliest first, at most `limit`. */
  due(until: number, limit: number): Promise<ScheduleRecord[]>
  /** The earliest `wakeAt` of unpaused schedules, null if none. */
  nextWakeAt(): Promise<number | null>
  /**
   * The ticker's liveness mark: when a ticker last said it was ticking (null: never). A new
   * ticker reads it to tell a failover (a short gap) from an outage (docs/schedules.md).
   */
  readMark(): Promise<number | null>
  writeMark(at: number): Promise<void>
}

/**
 * A wait URL's token as the store keeps it: the token's SHA-256 (`hash`, hex), never the token.
 * `usedAt` is set once the wait is completed through it; the row stays, so a replay is told
 * "used".
 */
export interface WaitUrlRecord {
  hash: string
  /** The token's public id, recorded in the run's log when it completes the wait. */
  tokenId: string
  runId: string
  threadId: string
  /** The key of the wait it completes (the thread's `wait` command key). */
  waitKey: string
  expiresAt: number
  /** The options the URL was made with (payload input type, signature secret's hash, …). */
  options: Json
  usedAt: number | null
  createdAt: number
}

/** Wait URL tokens (docs/schedules.md, "Wait URLs"). */
export interface WaitUrlStore {
  insert(record: WaitUrlRecord): Promise<void>
  /** The token with this hash, used or not; null if none. */
  find(hash: string): Promise<WaitUrlRecord | null>
  /**
   * Marks it used at `now` if it is not yet: true for the one caller that wins. The wait
   * itself is the guard (a run's wait is satisfied once); this is the record a replay reads.
   */
  use(hash: string, now: number): Promise<boolean>
}
