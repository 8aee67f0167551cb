import { jsonTextOf } from '../../core/json-text.js'
import type { Snapshot } from '../../core/ports.js'

/** A buffered snapshot: `data` already as JSON text. */
export interface BufferedSnapshot {
  seq: number
  createdAt: number
  format: number
  text: string
}

/**
 * Snapshots saved but not yet written, by run, each run's in ascending seq; a save at a seq
 * already buffered replaces it. The SQL stores write them with a later commit.
 */
export class SnapshotBuffer {
  readonly runs = new Map<string, BufferedSnapshot[]>()

  add(s: Snapshot): void {
    const rows = this.runs.get(s.runId) ?? []
    const row = {
      seq: s.seq,
      createdAt: s.createdAt,
      format: s.format,
      text: jsonTextOf(s.data),
    }
    const at = rows.findIndex((r) => r.seq >= s.seq)
    if (at === -1) rows.push(row)
    else if (rows[at].seq === s.seq) rows[at] = row
    else rows.splice(at, 0, row)
    this.runs.set(s.runId, rows)
  }

  /** The newest buffered snapshot of `runId` with seq <= atOrBefore. */
  latest(runId: string, atOrBefore: number): BufferedSnapshot | undefined {
    const rows = this.runs.get(runId)
    if (!rows) return undefined
    for (let i = rows.length - 1; i >= 0; i--) if (rows[i].seq <= atOrBefore) return rows[i]
    return undefined
  }
}

/** A stored snapshot row (integer columns as numbers from SQLite, strings from Postgres). */
export interface SnapshotRow {
  seq: number | string
  created_at: number | string
  format: number
  data: string
}

/**
 * The snapshot `latest` answers: the buffered one when it is at least as new as the stored
 * row, else the row; data parsed afresh, so the caller may mutate it.
 */
export function newerSnapshot(
  runId: string,
  buffered: BufferedSnapshot | undefined,
  row: SnapshotRow | undefined,
): Snapshot | null {
  if (buffered && (!row || buffered.seq >= Number(row.seq))) {
    const { seq, createdAt, format, text } = buffered
    return { runId, seq, createdAt, format, data: JSON.parse(text) }
  }
  if (!row) return null
  return {
    runId,
    seq: Number(row.seq),
    createdAt: Number(row.created_at),
    format: row.format,
    data: JSON.parse(row.data),
  }
}
