import type { EventRow } from '../shared/event-rows.js'
import { ReadBatcher } from '../shared/read-batcher.js'
import type { SnapshotRow } from '../shared/snapshot-buffer.js'
import { EVENT_COLUMNS } from './statements.js'

type Read = (action: string, text: string, params: unknown[]) => Promise<any[]>

/** A run and a seq: the newest snapshot at or before it, or the events from it on. */
export interface RunAt {
  runId: string
  seq: number
}

/**
 * The reads a wake makes of each run it loads (its newest snapshot, then the events after it),
 * batched across the runs loaded in the same loop turn (read-batcher.ts): many sleepers
 * falling due together cost one statement of each, not one per run. A turn with one read runs
 * the single-run statement, as before.
 */
export function postgresBatchedReads(
  s: string,
  read: Read,
  single: { snapshotLatest: string; read: string },
) {
  const columns = EVENT_COLUMNS.split(', ')
    .map((c) => `e.${c}`)
    .join(', ')
  const snapshotsSql = `SELECT w.i, x.seq, x.created_at, x.format, x.data
    FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS w(id, at, i)
    CROSS JOIN LATERAL (SELECT seq, created_at, format, data FROM ${s}.skein_snapshots
      WHERE run_id = w.id AND seq <= w.at ORDER BY seq DESC LIMIT 1) x`
  const eventsSql = `SELECT w.i, ${columns}
    FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS w(id, from_seq, i)
    JOIN ${s}.skein_runs r ON r.run_id = w.id
    JOIN ${s}.skein_events e ON e.run_no = r.run_no AND e.seq >= w.from_seq
    ORDER BY w.i, e.seq`
  const params = (keys: readonly RunAt[]) => [keys.map((k) => k.runId), keys.map((k) => k.seq)]

  const snapshots = new ReadBatcher<RunAt, SnapshotRow | undefined>(
    async ({ runId, seq }) => {
      const [row] = await read('read snapshot', single.snapshotLatest, [runId, seq])
      return row
    },
    async (keys) => {
      const out: Array<SnapshotRow | undefined> = new Array(keys.length).fill(undefined)
      for (const row of await read('read snapshots', snapshotsSql, params(keys)))
        out[Number(row.i) - 1] = row
      return out
    },
  )
  const events = new ReadBatcher<RunAt, EventRow[]>(
    ({ runId, seq }) => read(`read run ${runId}`, single.read, [runId, seq, null]),
    async (keys) => {
      const out: EventRow[][] = keys.map(() => [])
      for (const row of await read('read runs', eventsSql, params(keys)))
        out[Number(row.i) - 1].push(row)
      return out
    },
  )
  return {
    latestSnapshot: (runId: string, atOrBefore: number) =>
      snapshots.load({ runId, seq: atOrBefore }),
    events: (runId: string, fromSeq: number) => events.load({ runId, seq: fromSeq }),
  }
}
