import { InvalidRequestError, StoreError, StoreUnavailableError } from '../../core/errors.js'
import type {
  ActiveRunCount,
  ClaimStore,
  DeletedRun,
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
import { decodeSummaryCursor, encodeSummaryCursor } from '../../core/summaries.js'
import { checkBatch } from '../shared/append-batch.js'
import { type EventRow, rowToEnvelope } from '../shared/event-rows.js'
import { runListeners } from '../shared/run-listeners.js'
import { type AttributeRow, pageAttributesSql, summaryPageSql } from '../shared/summary-filter.js'
import { attachAttributes, rowToSummary, type SummaryRow } from '../shared/summary-rows.js'
import { postgresBatchedReads } from './batched-reads.js'
import { createChangeFeed } from './change-feed.js'
import {
  createOwnPool,
  listenConnector,
  loadPg,
  type OwnPool,
  type PostgresQueryable,
} from './driver.js'
import { createGroupCommit } from './group-commit.js'
import { postgresClaims } from './postgres-claims.js'
import { postgresFeed } from './postgres-feed.js'
import { postgresFlow } from './postgres-flow.js'
import { postgresLeases } from './postgres-leases.js'
import {
  checkRestored,
  keyRowsSql,
  restoreTrimmedParams,
  restoreTrimmedSql,
} from './postgres-restore.js'
import { postgresSchedules } from './postgres-schedules.js'
import { postgresSnapshotStore } from './postgres-snapshot-store.js'
import { postgresWorkerTasks } from './postgres-worker-tasks.js'
import {
  migrationSql,
  NEWER_SCHEMA_SQLSTATE,
  notifyChannel,
  SCHEMA_VERSION,
  schemaName,
} from './schema.js'
import { META_COLUMNS, statements } from './statements.js'
import { isUnavailable, storeError } from './store-errors.js'

/** Where the store connects: a URL (it makes and owns a `pg` pool), or your own pool. */
export type PostgresConnection =
  | { connectionString: string; pool?: never }
  | { pool: PostgresQueryable; connectionString?: never }

export interface PostgresStoreOptions {
  /** Postgres schema holding the tables, created if missing; default `'skein'`. */
  schema?: string
  /** Connections of the pool the store makes from a `connectionString`; default 10. */
  maxConnections?: number
  /** How long connecting may take before a call fails with STORE_UNAVAILABLE; default 5000. */
  connectTimeoutMs?: number
  /**
   * How long one statement may run; default 30000. The store's own pool sets it as the
   * server's `statement_timeout`; with any pool, a call that gets no answer within this plus
   * `connectTimeoutMs` fails with STORE_UNAVAILABLE instead of hanging.
   */
  statementTimeoutMs?: number
  /**
   * How often `subscribe` polls the tails of runs with listeners, for events other processes
   * appended whose NOTIFY was lost (a dropped LISTEN connection); default 1000 ms. Notified
   * events arrive without waiting for it.
   */
  pollIntervalMs?: number
  /** Where a throwing `subscribe` listener's error goes; default `console.error`. */
  onListenerError?: (error: unknown, runId: string) => void
  /** Supplies the `pg` module for a `connectionString` (default: load the installed package). */
  driver?: () => ReturnType<typeof loadPg>
}

/**
 * What a companion keeping tables in the store's schema uses (the run index, an actor host's
 * registry): the schema as a quoted SQL identifier, and a query through the store's pool that
 * first waits for the schema's migrations and fails like the store's own calls (closed store,
 * STORE_UNAVAILABLE). The tables are the store's, created by its migrations (docs/storage.md,
 * "Schema and migrations"); not for application queries.
 */
export interface PostgresCompanion {
  readonly schema: string
  query(action: string, text: string, params: unknown[]): Promise<any[]>
}

export interface PostgresStore extends EventStore {
  readonly schema: string
  readonly snapshots: SnapshotStore
  /** Creates or upgrades the schema now (otherwise the first call does). */
  ready(): Promise<void>
  trim(runId: string, beforeSeq: number): Promise<number>
  subscribe(runId: string, listener: EventListener): () => void
  listSummaries(query: StoreSummaryQuery): Promise<SummaryPage>
  listRunsWithDeadlines(): Promise<Array<{ runId: string; nextDeadlineAt: number }>>
  countActiveRuns(): Promise<ActiveRunCount[]>
  restoreTrimmed(runId: string, log: TrimmedLog): Promise<void>
  readonly leases: LeaseStore
  /** Named claims shared by every host on this schema (docs/storage.md, "Claims"). */
  readonly claims: ClaimStore
  /** Flow control's queues shared by every host on this schema (docs/flow-control.md). */
  readonly flow: FlowStore
  /** Makes every deferred append committed so far durable. */
  flush(): Promise<void>
  /** Commits what is queued; ends the pool if the store made it (never a pool you handed in). */
  close(): Promise<void>
  /** For companions with tables in this schema (`postgresRunIndex`, `postgresRegistry`). */
  readonly companion: PostgresCompanion
}

const positive = (name: string, value: number | undefined, fallback: number): number => {
  if (value === undefined) return fallback
  if (!Number.isInteger(value) || value <= 0) {
    throw new InvalidRequestError(`postgresStore: ${name} must be a positive integer`, {
      [name]: String(value),
    })
  }
  return value
}

/**
 * The PostgreSQL event store with its attached snapshot store. Appends made together share
 * one `skein_append` call (group-commit.ts): one round trip, one transaction, the tail and
 * idempotency key checked against the run's locked row, so two processes can never fork a
 * log. Tables live in their own schema, created and migrated on first use.
 *
 * @example
 * const store = postgresStore({ connectionString: process.env.DATABASE_URL }, { schema: 'billing' })
 * const engine = createEngine({ store, modules: [workflow()] })
 */
export function postgresStore(
  connection: PostgresConnection,
  options: PostgresStoreOptions = {},
): PostgresStore {
  const schema = schemaName(options.schema ?? 'skein')
  const connectTimeoutMs = positive('connectTimeoutMs', options.connectTimeoutMs, 5000)
  const statementTimeoutMs = positive('statementTimeoutMs', options.statementTimeoutMs, 30_000)
  const maxConnections = positive('maxConnections', options.maxConnections, 10)
  const pollIntervalMs = positive('pollIntervalMs', options.pollIntervalMs, 1000)
  let owned: OwnPool | undefined
  let db: PostgresQueryable
  let connectListener: ReturnType<typeof listenConnector>
  if (typeof connection?.connectionString === 'string') {
    const pg = (options.driver ?? loadPg)()
    const { connectionString } = connection
    owned = createOwnPool(pg, {
      connectionString,
      max: maxConnections,
      connectTimeoutMs,
      statementTimeoutMs,
    })
    db = owned
    connectListener = listenConnector({ pg, connectionString, connectTimeoutMs })
  } else if (typeof connection?.pool?.query === 'function') {
    db = connection.pool
    connectListener = listenConnector({ pool: connection.pool })
  } else {
    throw new InvalidRequestError(
      'postgresStore: pass { connectionString } or { pool } (anything with query(text, params))',
    )
  }
  const channel = notifyChannel(schema)
  const sql = statements(schema.sql, channel)
  const restoreSql = restoreTrimmedSql(schema.sql, channel)
  const keySql = keyRowsSql(schema.sql)
  const answerWithinMs = statementTimeoutMs + connectTimeoutMs
  let closed = false
  const guard = () => {
    if (closed)
      throw new StoreError(`postgres store (schema ${schema.name}) is closed`, {
        schema: schema.name,
      })
  }

  /** Every statement: a timer turns a call that never answers into STORE_UNAVAILABLE. */
  const query = (text: string, params: unknown[]): Promise<{ rows: any[] }> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new StoreUnavailableError(
              `postgres store: no answer from the database within ${answerWithinMs} ms`,
              { timeoutMs: answerWithinMs },
            ),
          ),
        answerWithinMs,
      )
      const settle = (error: unknown, result?: { rows: any[] }) => {
        clearTimeout(timer)
        if (result) resolve(result)
        else reject(error)
      }
      try {
        db.query(text, params).then((result) => settle(undefined, result), settle)
      } catch (error) {
        settle(error)
      }
    })

  let migrated = false
  let migrating: Promise<void> | undefined
  const migrate = async () => {
    try {
      await query(migrationSql(schema), [])
      migrated = true
    } catch (error) {
      // A database that was unreachable is tried again by the next call.
      if (isUnavailable(error)) migrating = undefined
      if ((error as { code?: unknown })?.code === NEWER_SCHEMA_SQLSTATE) {
        throw new StoreError(`postgres store: ${(error as Error).message}`, {
          schema: schema.name,
          supported: SCHEMA_VERSION,
        })
      }
      throw storeError(`migrate schema ${schema.name}`, error)
    }
  }
  const ready = (): Promise<void> => {
    guard()
    if (migrated) return Promise.resolve()
    migrating ??= migrate()
    return migrating
  }
  /** A read statement behind the closed guard and the migration, errors wrapped. */
  const read = async (action: string, text: string, params: unknown[]): Promise<any[]> => {
    if (!migrated) await ready()
    guard()
    try {
      return (await query(text, params)).rows
    } catch (error) {
      throw storeError(action, error)
    }
  }

  const listeners = runListeners(
    options.onListenerError ??
      ((error, runId) =>
        console.error(`skein postgres store: a listener of run ${runId} threw`, error)),
  )
  const readEvents = async (runId: string, fromSeq: number) =>
    (await read(`read run ${runId}`, sql.read, [runId, fromSeq, null])).map((row: EventRow) =>
      rowToEnvelope(runId, row),
    )
  const feed = createChangeFeed({
    channel,
    connect: connectListener,
    readTails: async (runIds) =>
      (await read('read tails', sql.tails, [runIds])).map((r) => ({
        runId: r.run_id,
        tail: Number(r.tail),
      })),
    readEvents,
    deliver: listeners.notify,
    pollIntervalMs,
    // The feed retries by itself (next hint, next poll, reconnect); nothing to report upward.
    onError: () => {},
  })
  /** Listeners per run, so the feed follows exactly the runs someone listens to. */
  const watched = new Map<string, number>()
  const subscribe = (runId: string, listener: EventListener): (() => void) => {
    const off = listeners.subscribe(runId, listener)
    const count = (watched.get(runId) ?? 0) + 1
    watched.set(runId, count)
    if (count === 1) feed.watch(runId)
    let done = false
    return () => {
      if (done) return
      done = true
      off()
      const left = (watched.get(runId) ?? 1) - 1
      if (left > 0) return void watched.set(runId, left)
      watched.delete(runId)
      feed.unwatch(runId)
    }
  }

  const workerTasks = postgresWorkerTasks(schema.sql, read, {
    channel,
    watch: (listener) => feed.watchTasks(listener),
  })
  const leases = postgresLeases(sql, read)
  const claims = postgresClaims(schema.sql, read)

  const batched = postgresBatchedReads(schema.sql, read, sql)
  const snapshots = postgresSnapshotStore({
    read,
    latest: batched.latestSnapshot,
    guard,
    ready,
    scheduleWrite: () => group.scheduleSnapshots(),
    drain: () => group.drain(),
    sql: { list: sql.snapshotList, prune: sql.snapshotPrune },
  })
  const projection = postgresFeed(schema.sql, read)
  const { schedules, waitUrls } = postgresSchedules(schema.sql, read)
  const group = createGroupCommit(query, sql, {
    onCommitted: (runId, events) => {
      feed.local(runId, events)
      if (events.length > 0) projection.committed()
    },
    takeSnapshots: () => snapshots.take(),
    snapshotsSettled: () => snapshots.settled(),
    hasPendingSnapshots: () => snapshots.hasPending(),
  })

  /** Buffered snapshots are written first, so none of a deleted run lands after it. */
  const deleteRuns = async (
    action: string,
    params: unknown[],
    statement = sql.deleteRuns,
  ): Promise<DeletedRun[]> => {
    if (!migrated) await ready()
    await group.drain()
    const rows = await read(action, statement, params)
    if (rows.length > 0) projection.committed()
    return rows.map((r) => ({
      runId: r.deleted_run_id,
      tail: Number(r.deleted_tail),
      status: r.deleted_status,
    }))
  }

  const store: PostgresStore = {
    schema: schema.name,
    capabilities: EVERY_CAPABILITY,
    companion: { schema: schema.sql, query: read },
    snapshots,
    feed: projection.feed,
    schedules,
    waitUrls,
    flow: postgresFlow(schema.sql, read),
    workerTasks,
    ready,
    append(runId, events, appendOptions) {
      return new Promise<void>((resolve, reject) => {
        guard()
        checkBatch(runId, events, appendOptions.expectedSeq)
        const request = { runId, events, options: appendOptions, resolve, reject }
        if (migrated) group.enqueue(request)
        else ready().then(() => group.enqueue(request), reject)
      })
    },
    leases,
    claims,
    read: async (runId, { fromSeq = 1, limit } = {}) => {
      const rows =
        limit === undefined
          ? await batched.events(runId, fromSeq)
          : await read(`read run ${runId}`, sql.read, [runId, fromSeq, Math.max(0, limit)])
      return rows.map((row: EventRow) => rowToEnvelope(runId, row))
    },
    tail: async (runId) => {
      const [row] = await read(`read tail of ${runId}`, sql.run, [runId])
      return row ? Number(row.tail) : 0
    },
    bounds: async (runId): Promise<LogBounds> => {
      const [row] = await read(`read bounds of ${runId}`, sql.run, [runId])
      const tail = row ? Number(row.tail) : 0
      return tail === 0 ? { head: 0, tail: 0 } : { head: Number(row.head), tail }
    },
    listRuns: async () => (await read('list runs', sql.listRuns, [])).map((r) => r.run_id),
    trim: async (runId, beforeSeq) => {
      const [row] = await read(`trim run ${runId}`, sql.trim, [runId, beforeSeq])
      return row.removed
    },
    subscribe,
    listSummaries: async (query) => {
      const cursor = query.cursor === undefined ? undefined : decodeSummaryCursor(query.cursor)
      const tables = {
        runs: `${schema.sql}.skein_runs`,
        attributes: `${schema.sql}.skein_run_attributes`,
      }
      const page = summaryPageSql(tables, META_COLUMNS, query, cursor, 'postgres')
      const rows = (await read('list summaries', page.sql, page.params)) as Array<
        SummaryRow & { run_no: string }
      >
      const more = rows.length > query.limit
      if (more) rows.pop()
      const last = rows[rows.length - 1]
      const runNos = rows.map((row) => Number(row.run_no))
      const runs = rows.map(rowToSummary)
      if (runNos.length > 0) {
        const attributes = pageAttributesSql(tables, runNos, 'postgres')
        const found = await read('list summary attributes', attributes.sql, attributes.params)
        attachAttributes(runs, runNos, found as AttributeRow[])
      }
      return {
        runs,
        nextCursor: more ? encodeSummaryCursor(Number(last.run_no)) : null,
      }
    },
    deleteRun: async (runId, { at, reason, statuses }) => {
      const [deleted] = await deleteRuns(`delete run ${runId}`, [
        [runId],
        statuses ?? null,
        null,
        null,
        at,
        reason,
      ])
      return deleted ?? null
    },
    deleteFinished: ({ statuses, updatedBefore, limit, at, reason, runs }) =>
      runs
        ? deleteRuns(
            'delete archived runs',
            [runs.map((r) => r.runId), runs.map((r) => r.tail), statuses, at, reason],
            sql.deleteAtTails,
          )
        : deleteRuns('delete finished runs', [null, statuses, updatedBefore, limit, at, reason]),
    idempotencyKeys: {
      list: async (runId) => {
        if (!migrated) await ready()
        const rows = await read(`list keys of run ${runId}`, keySql.list, [runId])
        return rows.map((r) => ({ key: r.key as string, seq: Number(r.seq) }))
      },
      restore: async (runId, keys) => {
        if (!migrated) await ready()
        await read(`restore keys of run ${runId}`, keySql.restore, [runId, JSON.stringify(keys)])
      },
    },
    restoreTrimmed: async (runId, log) => {
      const params = restoreTrimmedParams(runId, log)
      if (!migrated) await ready()
      await group.drain()
      const [row] = await read(`restore run ${runId}`, restoreSql, params)
      checkRestored(runId, row)
      feed.local(runId, log.events)
      projection.committed()
    },
    listRunsWithDeadlines: async () =>
      (await read('list deadlines', sql.deadlines, [])).map((r) => ({
        runId: r.run_id,
        nextDeadlineAt: Number(r.next_deadline_at),
      })),
    countActiveRuns: async () =>
      (await read('count active runs', sql.activeRuns, [])).map((r) => ({
        kind: r.kind,
        definitionName: r.definition_name,
        definitionVersion: r.definition_version,
        runs: Number(r.runs),
        sampleRunId: r.sample_run_id,
      })),
    async flush() {
      guard()
      await group.sync()
    },
    async close() {
      if (closed) return
      // Failed appends reject their own callers; draining itself never throws.
      if (migrated) await group.drain()
      closed = true
      await feed.close()
      listeners.clear()
      await owned?.end()
    },
  }
  return store
}
