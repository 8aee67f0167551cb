import type { HeldClaim } from '../../core/claim-rule.js'
import type { EventEnvelope } from '../../core/envelope.js'
import {
  FlowKeyFullError,
  IdempotencyConflictError,
  SeqConflictError,
  SkeinError,
  StoreError,
} from '../../core/errors.js'
import type { AppendAdmission } from '../../core/ports.js'
import type { AppendRequest } from '../shared/append-batch.js'
import { checkClaim } from '../shared/lease-rule.js'
import type { SqliteDatabase } from './driver.js'
import { runAttributeWriter, setsAttributes } from './run-attributes.js'
import {
  EVENT_PARAMS,
  EVENT_ROWS_PER_INSERT,
  eventInserts,
  metaParams,
  metaSetBits,
  newRunParams,
  pushEventParams,
  type RunRow,
  type Statements,
} from './statements.js'

/** Wraps a driver error so callers see one error type with the SQLite code kept. */
export function storeError(action: string, error: unknown): unknown {
  if (SkeinError.is(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  const sqliteCode = (error as { code?: unknown })?.code
  return new StoreError(
    `sqlite store: ${action} failed: ${message}`,
    typeof sqliteCode === 'string' ? { sqliteCode } : undefined,
    { cause: error },
  )
}

/**
 * Runs a synchronous store call behind the closed-store guard and as a promise: driver errors
 * become StoreErrors naming `action`, never a synchronous throw.
 */
export const guardedCall =
  (guard: () => void) =>
  <T>(action: string, fn: () => T): Promise<T> => {
    try {
      guard()
      return Promise.resolve(fn())
    } catch (error) {
      return Promise.reject(storeError(action, error))
    }
  }

/** What an append reads of its run's row (the head, which trimming moves, is not kept). */
type AppendRow = Pick<
  RunRow,
  | 'run_no'
  | 'tail'
  | 'status'
  | 'definition_name'
  | 'next_deadline_at'
  | 'lease_owner'
  | 'lease_epoch'
  | 'lease_expires_at'
>

/** The lease a run row holds, or null when it was never leased. */
export const storedLease = (
  row: Pick<RunRow, 'lease_owner' | 'lease_epoch' | 'lease_expires_at'> | null | undefined,
): HeldClaim | null =>
  row?.lease_owner == null
    ? null
    : { owner: row.lease_owner, epoch: row.lease_epoch, expiresAt: row.lease_expires_at ?? 0 }

/** Run rows kept between groups; past this the cache starts over (a re-read costs one SELECT). */
const MAX_CACHED_ROWS = 10_000

/**
 * Group commit: appends issued in the same event-loop turn share one `BEGIN IMMEDIATE … COMMIT`
 * (flushed from setImmediate: microtasks drain after every I/O callback, so a microtask flush
 * would commit each HTTP request or due timer alone), so
 * one fsync covers them all. Each request checks its run's tail (and idempotency key) inside
 * the shared transaction, in call order, before it writes anything, so a conflict rejects only
 * that request. Writes run without savepoints (each costs a statement journal); if a write
 * fails, the group is rolled back and redone with a savepoint per request, so a failed write
 * also undoes only its own request. Promises settle only after COMMIT returned.
 *
 * With `relaxDeferred` (a FULL-sync WAL file), a group made only of deferred appends
 * commits under `synchronous = NORMAL`: its WAL frames are written (a crash of this process
 * loses nothing) but not fsynced. The next FULL commit fsyncs the WAL, which covers them; until
 * then `unsynced` counts such groups for the store's `flush()`.
 */
export function createGroupCommit(
  db: SqliteDatabase,
  st: Statements,
  /** After COMMIT, per request; `lastPosition` is the feed position of its last event. */
  onCommitted: (
    runId: string,
    events: readonly EventEnvelope[],
    lastPosition: number,
    payloadBytes: number,
  ) => void,
  /** Extra writes that ride in the group's transaction (buffered snapshots). */
  beforeCommit: () => void = () => {},
  relaxDeferred = false,
  /** Takes a new run's flow slot in the transaction (`AppendOptions.admit`); false: full. */
  takeSlot: (runId: string, admit: AppendAdmission) => boolean = () => false,
) {
  let queue: AppendRequest[] = []
  let scheduled = false
  /** Each written request's last feed position and the length of its stored payloads. */
  const lastPositions = new Map<AppendRequest, { position: number; bytes: number }>()
  const insertEvents = eventInserts(db)
  const writeAttributes = runAttributeWriter(db)
  /**
   * Events written but not yet inserted: their parameters in statements' worth of rows
   * (`chunks`), for each request with events the index of its last row (`lastRows`), and
   * the attribute changes they carry, as run_no and payload text pairs in event order.
   * The fast path inserts a whole group's events after its run rows; an isolated request
   * inserts its own inside its savepoint.
   */
  const pending = {
    chunks: [[]] as unknown[][],
    owners: [] as AppendRequest[],
    lastRows: [] as number[],
    rows: 0,
    attributes: [] as Array<number | string>,
  }
  const clearPending = () => {
    pending.chunks = [[]]
    pending.owners.length = 0
    pending.lastRows.length = 0
    pending.rows = 0
    pending.attributes.length = 0
  }
  /**
   * Inserts the pending events, then writes their attribute changes. A statement's rows get
   * consecutive positions (the events' integer key, the highest + 1 for each row, under this
   * connection's write lock), so the statement's last rowid gives every row's position, as one
   * row per statement did for a request's events.
   */
  const insertPending = (): void => {
    const { chunks, owners, lastRows, attributes } = pending
    let owner = 0
    let first = 0
    for (const params of chunks) {
      const rows = params.length / EVENT_PARAMS
      if (rows === 0) break
      // Spread, not the array: better-sqlite3 reads an array's elements one property lookup
      // at a time, arguments directly (decisions.md, "SQLite statements take their parameters
      // spread").
      const last = Number(insertEvents(rows).run(...params).lastInsertRowid)
      const end = first + rows
      for (; owner < owners.length && lastRows[owner] < end; owner++) {
        lastPositions.get(owners[owner])!.position = last - (end - 1 - lastRows[owner])
      }
      first = end
    }
    for (let i = 0; i < attributes.length; i += 2) {
      writeAttributes(attributes[i] as number, attributes[i + 1] as string)
    }
    clearPending()
  }
  /** Deferred groups committed so far, and how many of them a FULL commit or sync covered. */
  const deferred = { committed: 0, synced: 0 }
  /** Set if the connection could not be put back to FULL: it must not commit again. */
  let stuckRelaxed: unknown
  const restoreFullSync = () => {
    try {
      db.exec('PRAGMA synchronous = FULL')
    } catch (error) {
      stuckRelaxed = storeError('restore synchronous = FULL', error)
    }
  }

  /**
   * Run rows as this connection last read or wrote them, so an append skips the SELECT of its
   * run. Valid while no other connection commits: each group reads `data_version` under its
   * write lock and forgets them all when it moved; every rollback forgets them too.
   */
  const rows = new Map<string, AppendRow>()
  let dataVersion = -1
  const fenceRows = () => {
    const version = st.dataVersion.get() as number
    if (version !== dataVersion || rows.size > MAX_CACHED_ROWS) rows.clear()
    dataVersion = version
  }
  const rowOf = (runId: string): AppendRow | null => {
    const cached = rows.get(runId)
    if (cached) return cached
    const row = st.run.get(runId)
    if (!row) return null
    // Only what an append reads: the row also has the head, which a trim would leave stale.
    const kept: AppendRow = {
      run_no: row.run_no,
      tail: row.tail,
      status: row.status,
      definition_name: row.definition_name,
      next_deadline_at: row.next_deadline_at,
      lease_owner: row.lease_owner,
      lease_epoch: row.lease_epoch,
      lease_expires_at: row.lease_expires_at,
    }
    rows.set(runId, kept)
    return kept
  }

  /** The run's row, or null for a run not yet in the file; throws on a conflict. */
  const check = ({ runId, options }: AppendRequest, assumeNew: boolean): AppendRow | null => {
    const { expectedSeq, idempotencyKey, lease } = options
    // A run its writer starts (expected tail 0) that this connection has not seen is taken to
    // be new without a SELECT: if it exists after all, the INSERT of its row fails on the
    // run_id key, and the group is redone with every row read. A new run has no lease and no
    // idempotency keys to check against.
    if (assumeNew && expectedSeq === 0 && !rows.has(runId)) {
      if (lease) checkClaim(runId, null, lease)
      return null
    }
    const row = rowOf(runId)
    if (lease) checkClaim(runId, storedLease(row), lease)
    const tail = row?.tail ?? 0
    if (tail !== expectedSeq) {
      throw new SeqConflictError(
        `run ${runId}: expected tail ${expectedSeq} but the log is at ${tail}`,
        { runId, expectedSeq, tail },
      )
    }
    if (idempotencyKey !== undefined && st.keyExists.get(runId, idempotencyKey)) {
      throw new IdempotencyConflictError(
        `run ${runId}: idempotency key "${idempotencyKey}" is already recorded`,
        { runId, idempotencyKey },
      )
    }
    return row
  }

  /**
   * A new run taking its flow slot: checked (and the slot recorded) in the transaction, before
   * its write; a full key refuses the request alone. Rolled back with the group if a write
   * fails; a redo takes it again.
   */
  const takeSlotOf = ({ runId, options }: AppendRequest): void => {
    const admit = options.admit
    if (!admit || options.expectedSeq !== 0 || takeSlot(runId, admit)) return
    throw new FlowKeyFullError(
      `run ${runId}: flow key ${admit.queue} ${JSON.stringify(admit.key)} has no free slot; nothing was written`,
      { runId, queue: admit.queue, key: admit.key },
    )
  }

  const writesNothing = ({ events, options }: AppendRequest) =>
    events.length === 0 && !options.meta && !options.lease

  const write = (request: AppendRequest, row: AppendRow | null): void => {
    const { runId, events, options } = request
    const { expectedSeq, idempotencyKey, meta, lease } = options
    const newTail = expectedSeq + events.length
    // A new run's row (tail and meta included) goes first: its events carry its run_no.
    // The lease goes on the row the append writes anyway, in the same statement: no page and
    // no statement of its own.
    const runNo = row
      ? row.run_no
      : Number(
          (lease
            ? st.insertRunLease.run(
                ...newRunParams(runId, newTail, meta),
                lease.owner,
                lease.epoch,
                lease.expiresAt,
              )
            : st.insertRun.run(...newRunParams(runId, newTail, meta))
          ).lastInsertRowid,
        )
    if (idempotencyKey !== undefined) st.insertKey.run(runId, idempotencyKey, newTail)
    if (events.length > 0) {
      let bytes = 0
      let chunk = pending.chunks[pending.chunks.length - 1]
      for (const event of events) {
        if (chunk.length === EVENT_ROWS_PER_INSERT * EVENT_PARAMS) pending.chunks.push((chunk = []))
        const payload = pushEventParams(chunk, runNo, event)
        bytes += payload.length
        if (setsAttributes(event, payload)) pending.attributes.push(runNo, payload)
      }
      pending.rows += events.length
      pending.owners.push(request)
      pending.lastRows.push(pending.rows - 1)
      lastPositions.set(request, { position: 0, bytes })
    }
    let deadline = row ? row.next_deadline_at : (meta?.nextDeadlineAt ?? null)
    let status = row ? row.status : (meta?.status ?? null)
    let definitionName = row ? row.definition_name : (meta?.definitionName ?? null)
    if (row) {
      if (meta) {
        const bits = metaSetBits(
          lease !== undefined,
          meta.status !== row.status,
          meta.nextDeadlineAt !== row.next_deadline_at,
          meta.definitionName !== row.definition_name,
        )
        st.setMeta[bits].run(...metaParams(runNo, newTail, meta, lease, bits))
        status = meta.status
        deadline = meta.nextDeadlineAt
        definitionName = meta.definitionName
      } else if (lease)
        st.setTailLease.run(newTail, lease.owner, lease.epoch, lease.expiresAt, runNo)
      else st.setTail.run(newTail, runNo)
    }
    rows.set(runId, {
      run_no: runNo,
      tail: newTail,
      status,
      definition_name: definitionName,
      next_deadline_at: deadline,
      lease_owner: lease ? lease.owner : (row?.lease_owner ?? null),
      lease_epoch: lease ? lease.epoch : (row?.lease_epoch ?? 0),
      lease_expires_at: lease ? lease.expiresAt : (row?.lease_expires_at ?? null),
    })
  }

  interface GroupResult {
    failed: Map<AppendRequest, unknown>
    /** Set when the transaction itself is gone (SQLITE_FULL, IOERR roll it back). */
    aborted?: unknown
    /** A write failed on the fast path: the caller must roll back and redo isolated. */
    redo?: unknown
  }

  const applyGroup = (
    group: AppendRequest[],
    isolated: boolean,
    assumeNew = !isolated,
  ): GroupResult => {
    const failed = new Map<AppendRequest, unknown>()
    for (const request of group) {
      let row: AppendRow | null
      try {
        row = check(request, assumeNew)
        takeSlotOf(request)
      } catch (error) {
        failed.set(request, error)
        continue
      }
      if (writesNothing(request)) continue
      if (!isolated) {
        try {
          write(request, row)
        } catch (error) {
          clearPending()
          return { failed, redo: storeError(`append to run ${request.runId}`, error) }
        }
        continue
      }
      st.savepoint.run()
      try {
        write(request, row)
        insertPending()
        st.release.run()
      } catch (error) {
        const wrapped = storeError(`append to run ${request.runId}`, error)
        failed.set(request, wrapped)
        clearPending()
        lastPositions.delete(request)
        rows.clear()
        if (!db.inTransaction) return { failed, aborted: wrapped }
        st.rollbackTo.run()
        st.release.run()
      }
    }
    if (!isolated && pending.rows > 0) {
      try {
        insertPending()
      } catch (error) {
        clearPending()
        const runs = group.length === 1 ? `run ${group[0].runId}` : `${group.length} runs`
        return { failed, redo: storeError(`append to ${runs}`, error) }
      }
    }
    return { failed }
  }

  /** Runs the group on the fast path; after a failed write, undoes it and redoes it isolated. */
  const applyAll = (group: AppendRequest[]): GroupResult => {
    const fast = applyGroup(group, false)
    if (fast.redo === undefined) return fast
    rows.clear()
    if (db.inTransaction) st.rollback.run()
    const lone = group.length === 1
    // A lone request fails alone, unless it took its run to be new: the run may exist after
    // all (a conflict, or a row without events yet), so it is redone once with its row read.
    if (lone && group[0].options.expectedSeq !== 0) {
      return { failed: new Map([[group[0], fast.redo]]), aborted: fast.redo }
    }
    try {
      st.begin.run()
    } catch (error) {
      return { failed: new Map(), aborted: storeError('begin transaction', error) }
    }
    if (!lone) return applyGroup(group, true)
    const again = applyGroup(group, false, false)
    if (again.redo === undefined) return again
    rows.clear()
    if (db.inTransaction) st.rollback.run()
    return { failed: new Map([[group[0], again.redo]]), aborted: again.redo }
  }

  const flush = (): void => {
    scheduled = false
    if (queue.length === 0) return
    const group = queue
    queue = []
    if (stuckRelaxed !== undefined) {
      for (const request of group) request.reject(stuckRelaxed)
      return
    }
    const relaxed =
      relaxDeferred && group.every((request) => request.options.durability === 'deferred')
    try {
      // Not a prepared statement: SQLite applies this pragma when it compiles it, not when
      // a prepared copy runs again. `exec`, not `pragma()`: a fifth of the cost (no result
      // rows to build).
      if (relaxed) db.exec('PRAGMA synchronous = NORMAL')
      st.begin.run()
      fenceRows()
    } catch (error) {
      if (relaxed) restoreFullSync()
      const wrapped = storeError('begin transaction', error)
      for (const request of group) request.reject(wrapped)
      return
    }
    const { failed, aborted: abortedInApply } = applyAll(group)
    let aborted = abortedInApply
    if (aborted === undefined) {
      try {
        beforeCommit()
      } catch {
        // A snapshot that cannot be written never fails the appends: it stays a cache miss.
      }
      try {
        st.commit.run()
        if (relaxed) deferred.committed++
        // A FULL commit fsyncs the WAL only if it wrote something.
        else if (group.some((r) => !failed.has(r) && !writesNothing(r))) {
          deferred.synced = deferred.committed
        }
      } catch (error) {
        aborted = storeError('commit', error)
        rows.clear()
        if (db.inTransaction) st.rollback.run()
      }
    }
    if (relaxed) restoreFullSync()
    for (const request of group) {
      const error = failed.get(request)
      if (error !== undefined) request.reject(error)
      else if (aborted !== undefined) request.reject(aborted)
      else {
        const written = lastPositions.get(request)
        onCommitted(request.runId, request.events, written?.position ?? 0, written?.bytes ?? 0)
        request.resolve()
      }
    }
    lastPositions.clear()
  }

  return {
    /**
     * Deferred groups committed and not yet covered by a FULL commit, as a mark to pass to
     * `markSynced` once the WAL has been fsynced (0: nothing to sync).
     */
    unsynced(): number {
      return deferred.committed > deferred.synced ? deferred.committed : 0
    },
    markSynced(mark: number): void {
      if (mark > deferred.synced) deferred.synced = mark
    },
    enqueue(request: AppendRequest): void {
      queue.push(request)
      if (!scheduled) {
        scheduled = true
        setImmediate(flush)
      }
    },
    /** Commits whatever is queued now (used by `close`). */
    flush,
    /** This connection changed the run's row outside a group (a lease call): re-read it. */
    forget(runId: string): void {
      rows.delete(runId)
    },
  }
}
