import type { EventEnvelope } from '../../core/envelope.js'
import {
  IdempotencyConflictError,
  SeqConflictError,
  SkeinError,
  StoreError,
} from '../../core/errors.js'
import type { AppendOptions } from '../../core/ports.js'
import type { SqliteDatabase } from './driver.js'
import { eventParams, metaParams, type Statements } from './statements.js'

export interface AppendRequest {
  runId: string
  events: readonly EventEnvelope[]
  options: AppendOptions
  resolve: () => void
  reject: (error: unknown) => void
}

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

/**
 * Group commit: appends issued in the same tick share one `BEGIN IMMEDIATE … COMMIT`, so
 * one fsync covers them all. Each request checks its run's tail (and idempotency key) inside
 * the shared transaction, in call order, and writes under its own savepoint, so a conflict
 * or a failed write undoes only that request. Promises settle only after COMMIT returned.
 */
export function createGroupCommit(
  db: SqliteDatabase,
  st: Statements,
  onCommitted: (runId: string, events: readonly EventEnvelope[]) => void,
  /** Extra writes that ride in the group's transaction (buffered snapshots). */
  beforeCommit: () => void = () => {},
) {
  let queue: AppendRequest[] = []
  let scheduled = false

  const apply = ({ runId, events, options }: AppendRequest): void => {
    const { expectedSeq, idempotencyKey, meta } = options
    const tail = st.run.get(runId)?.tail ?? 0
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
    if (events.length === 0 && !meta) return
    const newTail = expectedSeq + events.length
    st.savepoint.run()
    try {
      if (idempotencyKey !== undefined) st.insertKey.run(runId, idempotencyKey, newTail)
      for (const event of events) st.insertEvent.run(...eventParams(event))
      if (meta) st.upsertMeta.run(...metaParams(runId, newTail, meta))
      else st.upsertTail.run(runId, newTail)
      st.release.run()
    } catch (error) {
      // Some errors (SQLITE_FULL, IOERR) roll back the whole transaction by themselves.
      if (db.inTransaction) {
        st.rollbackTo.run()
        st.release.run()
      }
      throw storeError(`append to run ${runId}`, error)
    }
  }

  const flush = (): void => {
    scheduled = false
    if (queue.length === 0) return
    const group = queue
    queue = []
    try {
      st.begin.run()
    } catch (error) {
      const wrapped = storeError('begin transaction', error)
      for (const request of group) request.reject(wrapped)
      return
    }
    const failed = new Map<AppendRequest, unknown>()
    let aborted: unknown
    for (const request of group) {
      try {
        apply(request)
      } catch (error) {
        failed.set(request, error)
        if (!db.inTransaction) {
          aborted = error
          break
        }
      }
    }
    if (aborted === undefined) {
      try {
        beforeCommit()
      } catch {
        // A snapshot that cannot be written never fails the appends: it stays a cache miss.
      }
      try {
        st.commit.run()
      } catch (error) {
        aborted = storeError('commit', error)
        if (db.inTransaction) st.rollback.run()
      }
    }
    for (const request of group) {
      const error = failed.get(request)
      if (error !== undefined) request.reject(error)
      else if (aborted !== undefined) request.reject(aborted)
      else {
        onCommitted(request.runId, request.events)
        request.resolve()
      }
    }
  }

  return {
    enqueue(request: AppendRequest): void {
      queue.push(request)
      if (!scheduled) {
        scheduled = true
        queueMicrotask(flush)
      }
    },
    /** Commits whatever is queued now (used by `close`). */
    flush,
  }
}
