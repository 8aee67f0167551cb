import { closeSync, fdatasync, openSync } from 'node:fs'
import { resolve as resolvePath } from 'node:path'
import { promisify } from 'node:util'
import { InvalidRequestError, StoreError } from '../../core/errors.js'
import type {
  ActiveRunCount,
  ClaimStore,
  EventListener,
  EventStore,
  FlowStore,
  LeaseStore,
  LogBounds,
  SnapshotStore,
  StoreSummaryQuery,
  SummaryPage,
  TrimmedLog,
} from '../../core/ports.js'
import { EVERY_CAPABILITY } from '../../core/store-capabilities.js'
import { checkBatch } from '../shared/append-batch.js'
import { rowToEnvelope } from '../shared/event-rows.js'
import { changeFeed } from './change-feed.js'
import {
  enableWal,
  loadDriver,
  openDatabase,
  type SqliteDatabase,
  type SqliteDriver,
} from './driver.js'
import { createGroupCommit, guardedCall, storeError } from './group-commit.js'
import { keptPositions } from './kept-position.js'
import { migrate, type OnUpgrade } from './schema.js'
import { sqliteClaims } from './sqlite-claims.js'
import { sqliteDeletion } from './sqlite-deletion.js'
import { sqliteFeed } from './sqlite-feed.js'
import { sqliteFlow, sqliteSlotTaker } from './sqlite-flow.js'
import { sqliteLeases } from './sqlite-leases.js'
import { sqliteKeyRows, sqliteRestore } from './sqlite-restore.js'
import { sqliteSchedules } from './sqlite-schedules.js'
import { sqliteSnapshotStore } from './sqlite-snapshot-store.js'
import { sqliteWorkerTasks } from './sqlite-worker-tasks.js'
import { prepareStatements } from './statements.js'
import { summaryPages } from './summary-page.js'

export interface SqliteStoreOptions {
  /** Database file, created with its missing directories. `':memory:'` works but is lost on exit. */
  path: string
  /**
   * `'full'` (default): an acknowledged append survives power loss (an append marked
   * `durability: 'deferred'`, which the engine acknowledges to nobody, is fsynced by the next
   * commit or `flush()`). `'normal'`: faster, but may lose the last commits on power loss (never
   * corrupts the file; a process crash loses nothing).
   */
  synchronous?: 'full' | 'normal'
  /** How long a write waits for another connection's lock before failing; default 5000. */
  busyTimeoutMs?: number
  /**
   * How often `subscribe` looks for events other processes appended to the file (one
   * `PRAGMA data_version` read while anyone listens; the run's events only when it moved),
   * and a waiting worker task claim for their worker tasks; default 50 ms, 0 = only this
   * store's own appends.
   */
  changePollMs?: number
  /** Where a throwing `subscribe` listener's error goes; default `console.error`. */
  onListenerError?: (error: unknown, runId: string) => void
  /**
   * Told before a file written by an older skein is upgraded in place (once per file; the
   * upgrade copies every event, so a large file takes a while). Default: one line on stderr.
   */
  onUpgrade?: OnUpgrade
  /** Supplies the better-sqlite3 constructor (default: load the installed package). */
  driver?: () => SqliteDriver
}

export interface SqliteStore extends EventStore {
  readonly path: string
  readonly snapshots: SnapshotStore
  /** Run ownership for several processes on this file (docs/storage.md). */
  readonly leases: LeaseStore
  /** Named claims for several processes on this file (docs/storage.md, "Claims"). */
  readonly claims: ClaimStore
  /** Flow control's queues for every process on this file (docs/flow-control.md). */
  readonly flow: FlowStore
  trim(runId: string, beforeSeq: number): Promise<number>
  subscribe(runId: string, listener: EventListener): () => void
  listSummaries(query: StoreSummaryQuery): Promise<SummaryPage>
  listRunsWithDeadlines(): Promise<Array<{ runId: string; nextDeadlineAt: number }>>
  countActiveRuns(): Promise<ActiveRunCount[]>
  restoreTrimmed(runId: string, log: TrimmedLog): Promise<void>
  /** fsyncs the WAL if a deferred append committed since the last fsync. */
  flush(): Promise<void>
  close(): Promise<void>
  /** For companions with tables in this file (`sqliteRunIndex({ store })`). */
  readonly companion: SqliteCompanion
}

const datasync = promisify(fdatasync)

/**
 * What a companion keeping tables in the store's file uses (the run index): the store's own
 * connection (one connection in one thread never waits on its own lock), whether a write may
 * skip its own fsync (a FULL store on a WAL file, where the next fsync covers it), and a check
 * that throws once the store is closed. The tables are the store's, created by its migrations
 * (docs/storage.md, "Schema"); not for application queries.
 */
export interface SqliteCompanion {
  readonly db: SqliteDatabase
  readonly relaxed: boolean
  guard(): void
}

const announceUpgrade: OnUpgrade = ({ path, from, to }) =>
  console.warn(
    `skein sqlite: upgrading ${path} from schema ${from} to ${to} (one transaction; a large file takes a while)`,
  )

/**
 * The embedded persistent store (better-sqlite3, WAL). Appends are `BEGIN IMMEDIATE`
 * transactions that check the tail inside the transaction, so two processes on one file can
 * never fork a log; concurrent appends in one event-loop turn share a commit (group-commit.ts).
 *
 * @example
 * const store = sqliteStore({ path: '.skein/runs.db' })
 * const engine = createEngine({ store, modules: [workflow()] })
 */
export function sqliteStore(options: SqliteStoreOptions): SqliteStore {
  const { path, synchronous = 'full', busyTimeoutMs = 5000 } = options
  if (synchronous !== 'full' && synchronous !== 'normal') {
    throw new InvalidRequestError(`sqliteStore: synchronous must be 'full' or 'normal'`, {
      synchronous,
    })
  }
  const driver = (options.driver ?? loadDriver)()
  const db = openDatabase(driver, path, busyTimeoutMs)
  let journalMode: unknown
  try {
    journalMode = enableWal(db, busyTimeoutMs)
    db.pragma(`synchronous = ${synchronous.toUpperCase()}`)
    // Deleted rows are zeroed, not left in free pages (docs/data-lifecycle.md).
    db.pragma('secure_delete = ON')
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`)
    migrate(db, { onUpgrade: options.onUpgrade ?? announceUpgrade })
  } catch (error) {
    db.close()
    throw storeError(`open ${path}`, error)
  }
  const st = prepareStatements(db)
  const listeners = changeFeed(
    st,
    options.changePollMs ?? 50,
    options.onListenerError ??
      ((error, runId) =>
        console.error(`skein sqlite store: a listener of run ${runId} threw`, error)),
  )
  let closed = false
  const guard = () => {
    if (closed) throw new StoreError(`sqlite store ${path} is closed`, { path })
  }

  // Deferred appends may skip their fsync only where a later fsync of the WAL file covers
  // them: a FULL store on a WAL file (an in-memory database has neither).
  const walPath = journalMode === 'wal' ? `${resolvePath(path)}-wal` : undefined
  const snapshots = sqliteSnapshotStore(db, guard, synchronous === 'full' && walPath !== undefined)
  const feed = sqliteFeed(db, guard, synchronous === 'full' && walPath !== undefined)
  const group = createGroupCommit(
    db,
    st,
    (runId, events, lastPosition, payloadBytes) => {
      listeners.notify(runId, events)
      if (events.length > 0) feed.committed(events, lastPosition, payloadBytes)
    },
    () => snapshots.writePending(),
    synchronous === 'full' && walPath !== undefined,
    sqliteSlotTaker(db),
  )
  const restore = sqliteRestore(db, st, (runId, events, lastPosition, payloadBytes) => {
    if (events.length === 0) return
    listeners.notify(runId, events)
    feed.committed(events, lastPosition, payloadBytes)
  })
  const keyRows = sqliteKeyRows(db)
  let walFd: number | undefined
  const kept = keptPositions(db)
  // The head never passes tail + 1: trimming everything leaves an empty, still-fenced log.
  const trimTx = db.transaction((runId: string, beforeSeq: number): number => {
    const row = st.run.get(runId)
    if (!row) return 0
    const head = Math.min(beforeSeq, row.tail + 1)
    if (head <= row.head) return 0
    st.setHead.run(head, row.run_no)
    // Trimming to the tail may delete the file's newest event: its position stays given.
    const top = kept.top()
    const trimmed = st.trimEvents.run(row.run_no, head).changes
    kept.keep(top)
    return trimmed
  })

  const call = guardedCall(guard)
  const summaryPage = summaryPages(db)
  const deletion = sqliteDeletion({
    db,
    writePendingSnapshots: () => snapshots.writePending(),
    forget: (runId) => group.forget(runId),
    deleted: () => feed.deleted(),
  })
  const leases = sqliteLeases(
    db,
    st,
    call,
    group.forget,
    synchronous === 'full' && walPath !== undefined,
  )
  const claims = sqliteClaims(db, call)
  const { schedules, waitUrls } = sqliteSchedules(db, call)
  const flow = sqliteFlow(db, call, synchronous === 'full' && walPath !== undefined)
  const workerTasks = sqliteWorkerTasks(
    db,
    call,
    options.changePollMs ?? 50,
    () => closed,
    synchronous === 'full' && walPath !== undefined,
  )

  const store: SqliteStore = {
    path,
    capabilities: EVERY_CAPABILITY,
    snapshots,
    leases,
    claims,
    feed: feed.feed,
    schedules,
    waitUrls,
    flow,
    workerTasks,
    append(runId, events, appendOptions) {
      return new Promise<void>((resolve, reject) => {
        guard()
        checkBatch(runId, events, appendOptions.expectedSeq)
        group.enqueue({ runId, events, options: appendOptions, resolve, reject })
      })
    },
    read: (runId, { fromSeq = 1, limit } = {}) =>
      call(`read run ${runId}`, () =>
        (limit === undefined
          ? st.readAll.all(runId, fromSeq)
          : st.read.all(runId, fromSeq, Math.max(0, limit))
        ).map((row) => rowToEnvelope(runId, row)),
      ),
    tail: (runId) => call(`read tail of ${runId}`, () => st.run.get(runId)?.tail ?? 0),
    bounds: (runId) =>
      call(`read bounds of ${runId}`, (): LogBounds => {
        const row = st.run.get(runId)
        return !row || row.tail === 0 ? { head: 0, tail: 0 } : { head: row.head, tail: row.tail }
      }),
    listRuns: () => call('list runs', () => st.listRuns.all()),
    trim: (runId, beforeSeq) => call(`trim run ${runId}`, () => trimTx.immediate(runId, beforeSeq)),
    subscribe: listeners.subscribe,
    async flush() {
      guard()
      const mark = group.unsynced()
      if (mark === 0 || walPath === undefined) return
      try {
        // Opened for writing though never written: Windows flushes only handles with write access.
        walFd ??= openSync(walPath, 'r+')
        await datasync(walFd)
      } catch (error) {
        throw storeError(`sync ${walPath}`, error)
      }
      group.markSynced(mark)
    },
    deleteRun: (runId, deleteOptions) =>
      call(`delete run ${runId}`, () => {
        group.flush()
        return deletion.deleteRun(runId, deleteOptions)
      }),
    deleteFinished: (query) =>
      call('delete finished runs', () => {
        group.flush()
        return deletion.deleteFinished(query)
      }),
    idempotencyKeys: {
      list: (runId) => call(`list keys of run ${runId}`, () => keyRows.list.all(runId)),
      restore: (runId, keys) =>
        call(`restore keys of run ${runId}`, () => {
          group.flush()
          keyRows.restore(runId, keys)
        }),
    },
    restoreTrimmed: (runId, log) =>
      call(`restore run ${runId}`, () => {
        group.flush()
        group.forget(runId)
        return restore(runId, log)
      }),
    listSummaries: (query) => call('list summaries', () => summaryPage(query)),
    listRunsWithDeadlines: () => call('list deadlines', () => st.deadlines.all()),
    countActiveRuns: () => call('count active runs', () => st.activeRuns.all()),
    companion: { db, relaxed: synchronous === 'full' && walPath !== undefined, guard },
    async close() {
      if (closed) return
      group.flush()
      try {
        snapshots.writePending()
      } catch {
        // Snapshots are a cache: losing the last ones only lengthens the next fold.
      }
      closed = true
      listeners.clear()
      db.close()
      if (walFd !== undefined) closeSync(walFd)
    },
  }
  return store
}
