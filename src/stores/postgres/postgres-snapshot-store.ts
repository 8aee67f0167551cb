import type { Snapshot, SnapshotStore } from '../../core/ports.js'
import { newerSnapshot, SnapshotBuffer, type SnapshotRow } from '../shared/snapshot-buffer.js'

/** Buffered snapshots as the parallel arrays `skein_append` takes. */
export interface PendingSnapshots {
  runIds: string[]
  seqs: number[]
  createdAt: number[]
  formats: number[]
  data: string[]
}

export interface SnapshotIo {
  /** Runs a read statement (errors already wrapped). */
  read(action: string, text: string, params: unknown[]): Promise<any[]>
  /** Asks the group commit to write the buffer soon. */
  scheduleWrite(): void
  /** Resolves once the buffer (and anything in flight) is committed. */
  drain(): Promise<void>
  /** The newest stored snapshot row of `runId` at or before a seq (batched across runs). */
  latest(runId: string, atOrBefore: number): Promise<SnapshotRow | undefined>
  /** Throws if the store is closed. */
  guard(): void
  /** Resolves once the schema is migrated (the buffer is written through `skein_append`). */
  ready(): Promise<void>
  sql: { list: string; prune: string }
}

/**
 * Snapshots in table `skein_snapshots`, data as JSON text.
 *
 * Snapshots are a cache of the log, so saves are buffered: they ride in the next group
 * commit's `skein_append` call (sharing its transaction) or go in a group of their own from
 * the next loop turn. Reads see buffered snapshots and those being written. A crash can lose
 * a buffered snapshot, never an event: the run then folds from an older snapshot. Pruning
 * (which precedes trimming) waits for the buffer first, and its own commit flushes the WAL
 * that holds them, so events are only ever trimmed behind a durable snapshot.
 */
export function postgresSnapshotStore(io: SnapshotIo): SnapshotStore & {
  take(): PendingSnapshots
  settled(): void
  hasPending(): boolean
} {
  let pending = new SnapshotBuffer()
  /** What the group in flight carries: still readable until it settles. */
  let writing = new SnapshotBuffer()

  const bufferedLatest = (runId: string, atOrBefore: number) => {
    const a = pending.latest(runId, atOrBefore)
    const b = writing.latest(runId, atOrBefore)
    return a && b ? (a.seq >= b.seq ? a : b) : (a ?? b)
  }

  return {
    take() {
      const out: PendingSnapshots = { runIds: [], seqs: [], createdAt: [], formats: [], data: [] }
      for (const [runId, rows] of pending.runs) {
        for (const row of rows) {
          out.runIds.push(runId)
          out.seqs.push(row.seq)
          out.createdAt.push(row.createdAt)
          out.formats.push(row.format)
          out.data.push(row.text)
        }
      }
      writing = pending
      pending = new SnapshotBuffer()
      return out
    },
    settled() {
      writing = new SnapshotBuffer()
    },
    hasPending: () => pending.runs.size > 0,
    async save(s: Snapshot) {
      await io.ready()
      pending.add(s)
      io.scheduleWrite()
    },
    async latest(runId, atOrBefore = Number.MAX_SAFE_INTEGER) {
      io.guard()
      const buffered = bufferedLatest(runId, atOrBefore)
      return newerSnapshot(runId, buffered, await io.latest(runId, atOrBefore))
    },
    async list(runId) {
      io.guard()
      // The buffers are read before the table, as `latest` does: a group commit that takes and
      // settles them while the read is on its way committed after the read's view began.
      const buffered = [...(pending.runs.get(runId) ?? []), ...(writing.runs.get(runId) ?? [])]
      const rows = await io.read('list snapshots', io.sql.list, [runId])
      const seqs = new Set<number>(rows.map((r: { seq: string | number }) => Number(r.seq)))
      for (const row of buffered) seqs.add(row.seq)
      return [...seqs].sort((a, b) => a - b)
    },
    async prune(runId, keep) {
      io.guard()
      await io.drain()
      const rows = await io.read('prune snapshots', io.sql.prune, [runId, Math.max(0, keep)])
      return rows.length
    },
  }
}
