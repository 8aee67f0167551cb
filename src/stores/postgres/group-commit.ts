import { claimGranted, decideClaim, type HeldClaim } from '../../core/claim-rule.js'
import type { EventEnvelope } from '../../core/envelope.js'
import {
  FlowKeyFullError,
  IdempotencyConflictError,
  LeaseLostError,
  SeqConflictError,
  StoreError,
} from '../../core/errors.js'
import { jsonTextOf } from '../../core/json-text.js'
import type { AppendRequest } from '../shared/append-batch.js'
import type { PendingSnapshots } from './postgres-snapshot-store.js'
import type { Statements } from './statements.js'
import { isUnavailable, storeError } from './store-errors.js'

interface AppendResultRow {
  o_req: number
  o_outcome: 'seq' | 'key' | 'lease' | 'error' | 'snapshots'
  o_tail: string | number | null
  o_detail: string | null
}

/** A run row's lease columns as the drivers return them (bigints as strings). */
export interface LeaseRow {
  lease_owner: string | null
  lease_epoch: string | number
  lease_expires_at: string | number | null
}

const SNAPSHOT_DELAY_MS = 5

type Query = (text: string, params: unknown[]) => Promise<{ rows: any[] }>

/** One event as `skein_append` reads it from its JSON array (absent fields read as NULL). */
/** An event as `skein_append` and the restore statement read it (append-function.ts). */
export interface EventRecord {
  /** The request's place in its group (absent outside a group commit). */
  r?: number
  s: number
  id: string
  ts: number
  t: string
  th: string | null
  o: string
  c?: string
  e?: string
  ik?: string
  k?: string
  /** The payload as JSON text (nested as a string: see append-function.ts). */
  p: string
}

/**
 * `skein_append`'s parameters for the queued requests (their events as one JSON text, see
 * EventRecord), and the requests they hold: one whose payload does not serialize (a BigInt, a
 * cycle) is rejected on its own here and writes nothing.
 */
function groupParams(
  queued: readonly AppendRequest[],
  snapshots: PendingSnapshots,
): { group: AppendRequest[]; params: unknown[]; admitting: unknown[] | null } {
  const group: AppendRequest[] = []
  const cols: unknown[][] = Array.from({ length: 15 }, () => [])
  // A request has meta exactly when its status is not null (RunMeta.status is required), and
  // a lease claim exactly when its owner is not null.
  const [ids, expected, keys, counts, status, kind, name, version, created, updated, deadline] =
    cols
  const [owner, epoch, expires, now] = cols.slice(11)
  const events: EventRecord[] = []
  // New runs taking a flow slot (skein_flow_take): request, queue, key, limit, priority.
  const take: unknown[][] = [[], [], [], [], []]
  let takeNow = 0
  let takeHold = 0
  for (const request of queued) {
    const { runId, events: batch, options } = request
    let records: EventRecord[]
    try {
      const r = group.length + 1
      records = batch.map((e) => eventRecord(e, r))
    } catch (error) {
      request.reject(storeError(`append to run ${runId}`, error))
      continue
    }
    group.push(request)
    for (const record of records) events.push(record)
    const admit = options.admit
    if (admit) {
      for (const [i, value] of [
        group.length,
        admit.queue,
        admit.key,
        admit.limit,
        admit.priority,
      ].entries())
        take[i].push(value)
      takeNow = Math.max(takeNow, admit.now)
      takeHold = Math.max(takeHold, admit.holdUntil)
    }
    const meta = options.meta
    ids.push(runId)
    expected.push(options.expectedSeq)
    keys.push(options.idempotencyKey ?? null)
    counts.push(batch.length)
    status.push(meta?.status ?? null)
    kind.push(meta?.kind ?? null)
    name.push(meta?.definitionName ?? null)
    version.push(meta?.definitionVersion ?? null)
    created.push(meta?.createdAt ?? null)
    updated.push(meta?.updatedAt ?? null)
    deadline.push(meta?.nextDeadlineAt ?? null)
    const lease = options.lease
    owner.push(lease?.owner ?? null)
    epoch.push(lease?.epoch ?? null)
    expires.push(lease?.expiresAt ?? null)
    now.push(lease?.now ?? null)
  }
  const params = [
    ...cols,
    JSON.stringify(events),
    snapshots.runIds,
    snapshots.seqs,
    snapshots.createdAt,
    snapshots.formats,
    snapshots.data,
  ]
  const admitting = take[0].length === 0 ? null : [...take, takeNow, takeHold]
  return { group, params, admitting }
}

/** A lone append `appendOne` can take: to a run that exists, with events, without a key. */
const plain = ({ events, options }: AppendRequest) =>
  options.expectedSeq > 0 && events.length > 0 && options.idempotencyKey === undefined

const writesSomething = ({ events, options }: AppendRequest) =>
  events.length > 0 || options.meta !== undefined

/** The lease a run row holds as the drivers return it, or null when it was never leased. */
export const rowLease = (row: LeaseRow): HeldClaim | null =>
  row.lease_owner === null
    ? null
    : {
        owner: row.lease_owner,
        epoch: Number(row.lease_epoch),
        expiresAt: Number(row.lease_expires_at),
      }

function conflictOf(request: AppendRequest, row: AppendResultRow): unknown {
  const { runId, options } = request
  if (row.o_outcome === 'seq') {
    const tail = Number(row.o_tail)
    // skein_flow_take refused it (its expected tail became -1): a new run's tail 0 matches 0.
    if (options.admit && options.expectedSeq === 0 && tail === 0) {
      const { queue, key } = options.admit
      return new FlowKeyFullError(
        `run ${runId}: flow key ${queue} ${JSON.stringify(key)} has no free slot; nothing was written`,
        { runId, queue, key },
      )
    }
    return new SeqConflictError(
      `run ${runId}: expected tail ${options.expectedSeq} but the log is at ${tail}`,
      { runId, expectedSeq: options.expectedSeq, tail },
    )
  }
  if (row.o_outcome === 'lease') {
    const claim = options.lease
    const storedEpoch = Number(row.o_tail)
    return new LeaseLostError(
      `run ${runId}: the claim of ${claim?.owner} at epoch ${claim?.epoch} is refused (the lease is held by ${row.o_detail ?? 'nobody'} at epoch ${storedEpoch}); nothing was written`,
      {
        runId,
        owner: claim?.owner ?? null,
        epoch: claim?.epoch ?? null,
        storedOwner: row.o_detail,
        storedEpoch,
      },
    )
  }
  if (row.o_outcome === 'key') {
    return new IdempotencyConflictError(
      `run ${runId}: idempotency key "${options.idempotencyKey}" is already recorded`,
      { runId, idempotencyKey: options.idempotencyKey ?? null },
    )
  }
  return new StoreError(`postgres store: append to run ${runId} failed: ${row.o_detail}`, {
    sqlstate: row.o_detail?.slice(0, 5) ?? null,
  })
}

export interface GroupCommitHooks {
  /** Runs after a request's batch committed (subscribers). */
  onCommitted: (runId: string, events: readonly EventEnvelope[]) => void
  /** Takes the buffered snapshots to ride in the next group. */
  takeSnapshots: () => PendingSnapshots
  /** Told when a group settled: the snapshots it carried are written (or lost). */
  snapshotsSettled: () => void
  hasPendingSnapshots: () => boolean
}

/**
 * Group commit: appends made while no group is in flight and within one event-loop turn
 * (flushed from setImmediate, like the SQLite store), or made while a group is in flight,
 * share the next `skein_append` call: one statement, one transaction, one WAL flush. At most
 * one group is in flight, so the batch grows with the commit latency (16 concurrent runs
 * make groups of up to 16) and appends to one run keep their call order.
 *
 * Each request is checked in the transaction against its run's locked row, in call order, so
 * a conflict fails only that request. If the statement itself raises (a write failed), the
 * group is redone with an exception block per request, so a failed write fails only its own
 * request. A lost connection fails the whole group with STORE_UNAVAILABLE: it may or may not
 * have committed, which the next append's `expectedSeq` check settles.
 *
 * A group made only of deferred appends (`durability: 'deferred'`) commits with `synchronous_commit = off` (visible
 * at once, flushed by the WAL writer within ~3 × wal_writer_delay); the next durable commit's
 * flush covers it, and `flush()` forces one.
 */
export function createGroupCommit(
  query: Query,
  sql: Pick<Statements, 'append' | 'appendAdmitting' | 'appendOne' | 'runLease' | 'sync'>,
  hooks: GroupCommitHooks,
) {
  let queue: AppendRequest[] = []
  let scheduled = false
  let inFlight: Promise<void> | undefined
  let snapshotTimer: NodeJS.Timeout | undefined
  /** Deferred groups committed, and how many of them a durable commit or sync covered. */
  const deferred = { committed: 0, synced: 0 }

  const settle = (group: AppendRequest[], failures: Map<number, unknown>) => {
    for (let i = 0; i < group.length; i++) {
      const request = group[i]
      const error = failures.get(i + 1)
      if (error !== undefined) request.reject(error)
      else {
        hooks.onCommitted(request.runId, request.events)
        request.resolve()
      }
    }
  }

  /**
   * The common lone append (a run one at a time): one plain statement instead of a
   * `skein_append` call, about a third less time on the server. A conflict comes back as the
   * same result row the function gives.
   */
  const appendOne = async (
    { runId, events, options }: AppendRequest,
    eventsJson: string,
    relaxed: boolean,
  ): Promise<AppendResultRow[]> => {
    const { expectedSeq, meta } = options
    const { rows } = await query(sql.appendOne, [
      runId,
      expectedSeq,
      expectedSeq + events.length,
      meta?.status ?? null,
      meta?.kind ?? null,
      meta?.definitionName ?? null,
      meta?.definitionVersion ?? null,
      meta?.createdAt ?? null,
      meta?.updatedAt ?? null,
      meta?.nextDeadlineAt ?? null,
      eventsJson,
      relaxed,
      options.lease?.owner ?? null,
      options.lease?.epoch ?? null,
      options.lease?.expiresAt ?? null,
      options.lease?.now ?? null,
    ])
    if (rows[0].run_no !== null) return []
    // Matched nothing: the tail moved or the claim was refused (the claim is reported first,
    // as skein_append does). Read after the fact, so it is a diagnosis, not a second check.
    const [run] = (await query(sql.runLease, [runId])).rows
    const claim = options.lease
    if (claim && run && !claimGranted(decideClaim(rowLease(run), claim))) {
      return [{ o_req: 1, o_outcome: 'lease', o_tail: run.lease_epoch, o_detail: run.lease_owner }]
    }
    return [{ o_req: 1, o_outcome: 'seq', o_tail: run ? run.tail : 0, o_detail: null }]
  }

  const failAll = (group: AppendRequest[], error: unknown) => {
    for (const request of group) request.reject(error)
  }

  const runGroup = async (queued: AppendRequest[]): Promise<void> => {
    const snapshots = hooks.takeSnapshots()
    const { group, params, admitting } = groupParams(queued, snapshots)
    // Snapshots alone are a cache: they commit relaxed too (a later durable commit covers them).
    const relaxed = group.every((r) => r.options.durability === 'deferred')
    // With new runs taking flow slots, the same call through skein_flow_take (migration 18).
    const groupCall = (isolated: boolean) =>
      admitting === null
        ? query(sql.append, [...params, relaxed, isolated])
        : query(sql.appendAdmitting, [...params, relaxed, isolated, ...admitting])
    if (group.length === 0 && snapshots.runIds.length === 0) return hooks.snapshotsSettled()
    const action = group.length === 1 ? `append to run ${group[0].runId}` : 'group commit'
    let rows: AppendResultRow[]
    try {
      rows =
        group.length === 1 && snapshots.runIds.length === 0 && plain(group[0])
          ? await appendOne(group[0], params[15] as string, relaxed)
          : (await groupCall(false)).rows
    } catch (error) {
      if (isUnavailable(error) || group.length <= 1) {
        failAll(group, storeError(action, error))
        hooks.snapshotsSettled()
        return
      }
      try {
        rows = (await groupCall(true)).rows
      } catch (again) {
        failAll(group, storeError(action, again))
        hooks.snapshotsSettled()
        return
      }
    }
    hooks.snapshotsSettled()
    const failures = new Map<number, unknown>()
    for (const row of rows) {
      if (row.o_req > 0) failures.set(row.o_req, conflictOf(group[row.o_req - 1], row))
    }
    if (relaxed) deferred.committed++
    // A durable commit flushes the WAL up to its own record, which covers every earlier
    // deferred group, if it wrote anything (a transaction that wrote nothing flushes nothing).
    else if (group.some((r, i) => !failures.has(i + 1) && writesSomething(r))) {
      deferred.synced = deferred.committed
    }
    settle(group, failures)
  }

  const flush = (): void => {
    scheduled = false
    if (inFlight || (queue.length === 0 && !hooks.hasPendingSnapshots())) return
    const group = queue
    queue = []
    inFlight = runGroup(group).finally(() => {
      inFlight = undefined
      if (queue.length > 0 || hooks.hasPendingSnapshots()) schedule()
    })
  }

  const schedule = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(flush)
  }

  return {
    enqueue(request: AppendRequest): void {
      queue.push(request)
      if (!inFlight) schedule()
    },
    /**
     * Writes buffered snapshots soon: with the next group, or in a group of their own after a
     * few milliseconds without appends (a run that parks saves one right after its last
     * append; the next run's appends usually come first and carry it).
     */
    scheduleSnapshots(): void {
      snapshotTimer ??= setTimeout(() => {
        snapshotTimer = undefined
        if (!inFlight) flush()
      }, SNAPSHOT_DELAY_MS)
      snapshotTimer.unref?.()
    },
    /** Resolves once every append queued so far and every buffered snapshot is committed. */
    async drain(): Promise<void> {
      if (snapshotTimer) clearTimeout(snapshotTimer)
      snapshotTimer = undefined
      while (inFlight || queue.length > 0 || hooks.hasPendingSnapshots()) {
        if (!inFlight) flush()
        await inFlight
      }
    },
    /** Makes every committed deferred group durable (one tiny synchronous commit). */
    async sync(): Promise<void> {
      if (deferred.committed <= deferred.synced) return
      const mark = deferred.committed
      try {
        await query(sql.sync, [])
      } catch (error) {
        throw storeError('sync', error)
      }
      if (mark > deferred.synced) deferred.synced = mark
    },
  }
}

/** The event's row as the Postgres statements take it: `r` names its request in a group. */
export function eventRecord(e: EventEnvelope, r?: number): EventRecord {
  return {
    r,
    s: e.seq,
    id: e.id,
    ts: e.ts,
    t: e.type,
    th: e.threadId,
    o: e.origin,
    c: e.causationId,
    e: e.effectId,
    ik: e.idempotencyKey,
    k: e.key,
    p: jsonTextOf(e.payload),
  }
}
