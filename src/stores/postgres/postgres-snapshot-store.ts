import type { Snapshot, SnapshotStore } from '../../core/ports.js'

/** Buffered snapshots as the parallel arrays `skein_append` takes. */
export interface PendingSnapshots {
  runIds: string[]
  seqs: number[]
  createdAt: number[]
  formats: number[]
  data: string[]
}

interface Buffered {
  seq: number
  createdAt: number
  format: number
  /** `data` as JSON text. */
  text: string
}

interface SnapshotRow {
  seq: string | number
  created_at: string | number
  format: number
  data: string
}

export interface SnapshotIo {
  /** Runs a read statement (errors already wrapped). */
  read(action: string, text: string, params: unknown[]): Promise<any[]>
  /** Asks the group commit to write the buffer soon. */
  scheduleWrite(): void
  /** Resolves once the buffer (and anything in flight) is committed. */
  drain(): Promise<void>
  /** Throws if the store is closed. */
  guard(): void
  /** Resolves once the schema is migrated (the buffer is written through `skein_append`). */
  ready(): Promise<void>
  sql: { latest: string; list: string; prune: string }
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
  let pending = new Map<string, Buffered[]>()
  /** What the group in flight carries: still readable until it settles. */
  let writing = new Map<string, Buffered[]>()

  const newest = (rows: Buffered[] | undefined, atOrBefore: number) => {
    if (!rows) return undefined
    for (let i = rows.length - 1; i >= 0; i--) if (rows[i].seq <= atOrBefore) return rows[i]
    return undefined
  }
  const bufferedLatest = (runId: string, atOrBefore: number) => {
    const a = newest(pending.get(runId), atOrBefore)
    const b = newest(writing.get(runId), atOrBefore)
    return a && b ? (a.seq >= b.seq ? a : b) : (a ?? b)
  }

  return {
    take() {
      const out: PendingSnapshots = { runIds: [], seqs: [], createdAt: [], formats: [], data: [] }
      for (const [runId, rows] of pending) {
        for (const row of rows) {
          out.runIds.push(runId)
          out.seqs.push(row.seq)
          out.createdAt.push(row.createdAt)
          out.formats.push(row.format)
          out.data.push(row.text)
        }
      }
      writing = pending
      pending = new Map()
      return out
    },
    settled() {
      writing = new Map()
    },
    hasPending: () => pending.size > 0,
    async save(s: Snapshot) {
      await io.ready()
      const rows = pending.get(s.runId) ?? []
      const row = {
        seq: s.seq,
        createdAt: s.createdAt,
        format: s.format,
        text: JSON.stringify(s.data),
      }
      const at = rows.findIndex((r) => r.seq >= s.seq)
      if (at === -1) rows.push(row)
      else if (rows[at].seq === s.seq) rows[at] = row
      else rows.splice(at, 0, row)
      pending.set(s.runId, rows)
      io.scheduleWrite()
    },
    async latest(runId, atOrBefore = Number.MAX_SAFE_INTEGER) {
      io.guard()
      const buffered = bufferedLatest(runId, atOrBefore)
      const [row] = (await io.read('read snapshot', io.sql.latest, [
        runId,
        atOrBefore,
      ])) as SnapshotRow[]
      if (buffered && (!row || buffered.seq >= Number(row.seq))) {
        return {
          runId,
          seq: buffered.seq,
          createdAt: buffered.createdAt,
          format: buffered.format,
          data: JSON.parse(buffered.text),
        }
      }
      if (!row) return null
      return {
        runId,
        seq: Number(row.seq),
        createdAt: Number(row.created_at),
        format: row.format,
        data: JSON.parse(row.data),
      }
    },
    async list(runId) {
      io.guard()
      const rows = await io.read('list snapshots', io.sql.list, [runId])
      const seqs = new Set<number>(rows.map((r: { seq: string | number }) => Number(r.seq)))
      for (const row of [...(pending.get(runId) ?? []), ...(writing.get(runId) ?? [])])
        seqs.add(row.seq)
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
