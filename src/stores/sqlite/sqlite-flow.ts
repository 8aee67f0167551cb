import type { FlowKeyState, FlowStore } from '../../core/ports.js'
import type { SqliteDatabase } from './driver.js'
import { lazyStatements } from './statements.js'

type Call = <T>(action: string, fn: () => T) => Promise<T>

const FINISHED = `('completed', 'failed', 'cancelled')`

interface KeyRow {
  queue: string
  flow_key: string
  active: number
  queued: number
  oldest: number | null
}

/**
 * Flow control's queues in `skein_flow` (schema v10, docs/flow-control.md). An admission round
 * is one `BEGIN IMMEDIATE` transaction, so the processes on the file admit one after another
 * and a key's count is exact. A slot is an admitted row whose run (`skein_runs.status`) has
 * not finished, or whose log does not exist yet while its hold lasts: the commit that ends a
 * run frees its slot. With `relaxed` (a FULL-sync WAL file) an admission commits under
 * `synchronous = NORMAL`: what it admits is started by an append that is fsynced, which covers
 * it, and an admission lost with the machine is made again.
 */
export function sqliteFlow(db: SqliteDatabase, call: Call, relaxed: boolean): FlowStore {
  const st = lazyStatements(db, (lazy) => ({
    enqueue: lazy.prepare(
      `INSERT INTO skein_flow (run_id, queue, flow_key, priority, start_at, enqueued_at)
        VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
    ),
    forget: lazy.prepare<[{ queue: string; key: string; now: number }]>(
      `DELETE FROM skein_flow WHERE run_id IN (
        SELECT f.run_id FROM skein_flow f LEFT JOIN skein_runs r ON r.run_id = f.run_id
        WHERE f.queue = @queue AND f.flow_key = @key AND (r.status IN ${FINISHED}
          OR (r.status IS NULL AND f.admitted_at IS NOT NULL AND f.hold_until <= @now)))`,
    ),
    active: lazy
      .prepare<[string, string], number>(
        `SELECT count(*) FROM skein_flow
          WHERE queue = ? AND flow_key = ? AND admitted_at IS NOT NULL`,
      )
      .pluck(),
    waiting: lazy
      .prepare<[{ queue: string; key: string; now: number; own: string; limit: number }], string>(
        `SELECT f.run_id FROM skein_flow f LEFT JOIN skein_runs r ON r.run_id = f.run_id
          WHERE f.queue = @queue AND f.flow_key = @key AND f.admitted_at IS NULL
            AND f.start_at <= @now AND (r.status = 'queued' OR f.run_id = @own)
          ORDER BY f.priority DESC, f.seq LIMIT @limit`,
      )
      .pluck(),
    mark: lazy.prepare<[number, number, string]>(
      'UPDATE skein_flow SET admitted_at = ?, hold_until = ? WHERE run_id = ?',
    ),
    admitted: lazy
      .prepare<[string], number | null>('SELECT admitted_at FROM skein_flow WHERE run_id = ?')
      .pluck(),
    pendingKeys: lazy.prepare<
      [{ now: number; queue: string; key: string; limit: number }],
      { queue: string; flow_key: string }
    >(
      `SELECT DISTINCT f.queue, f.flow_key FROM skein_flow f JOIN skein_runs r ON r.run_id = f.run_id
        WHERE f.admitted_at IS NULL AND f.start_at <= @now AND r.status = 'queued'
          AND (f.queue, f.flow_key) > (@queue, @key)
        ORDER BY f.queue, f.flow_key LIMIT @limit`,
    ),
    stalled: lazy
      .prepare<[number], string>(
        `SELECT f.run_id FROM skein_flow f JOIN skein_runs r ON r.run_id = f.run_id
          WHERE f.admitted_at IS NOT NULL AND f.admitted_at < ? AND r.status = 'queued'`,
      )
      .pluck(),
    keys: lazy.prepare<[], KeyRow>(
      `SELECT f.queue, f.flow_key,
          sum(f.admitted_at IS NOT NULL) AS active,
          sum(f.admitted_at IS NULL AND r.status = 'queued') AS queued,
          min(CASE WHEN f.admitted_at IS NULL AND r.status = 'queued' THEN f.enqueued_at END) AS oldest
        FROM skein_flow f LEFT JOIN skein_runs r ON r.run_id = f.run_id
        WHERE r.status IS NULL OR r.status NOT IN ${FINISHED}
        GROUP BY f.queue, f.flow_key ORDER BY f.queue, f.flow_key`,
    ),
  }))
  const admitTx = db.transaction((request: Parameters<FlowStore['admit']>[0]): string[] => {
    const { queue, key, limit, now, holdUntil, enqueue: e } = request
    if (e) st.enqueue.run(e.runId, e.queue, e.key, e.priority, e.startAt, e.enqueuedAt)
    st.forget.run({ queue, key, now })
    const free = limit - (st.active.get(queue, key) ?? 0)
    if (free <= 0) return []
    const chosen = st.waiting.all({ queue, key, now, own: e?.runId ?? '', limit: free })
    for (const runId of chosen) st.mark.run(now, holdUntil, runId)
    return chosen
  })
  const admit = (request: Parameters<FlowStore['admit']>[0]): string[] => {
    if (!relaxed) return admitTx.immediate(request)
    db.exec('PRAGMA synchronous = NORMAL')
    try {
      return admitTx.immediate(request)
    } finally {
      db.exec('PRAGMA synchronous = FULL')
    }
  }
  return {
    admit: (request) => call(`admit ${request.queue} ${request.key}`, () => admit(request)),
    admitted: (runId) =>
      call(`read admission of ${runId}`, () => (st.admitted.get(runId) ?? null) !== null),
    pending: (now, stalledBefore, limit, after) =>
      call('read pending admissions', () => ({
        keys: st.pendingKeys
          .all({ now, queue: after?.queue ?? '', key: after?.key ?? '', limit })
          .map((r) => ({ queue: r.queue, key: r.flow_key })),
        stalled: st.stalled.all(stalledBefore),
      })),
    keys: () =>
      call('read flow keys', () =>
        st.keys.all().map(
          (r): FlowKeyState => ({
            queue: r.queue,
            key: r.flow_key,
            active: r.active ?? 0,
            queued: r.queued ?? 0,
            oldestQueuedAt: r.oldest ?? null,
          }),
        ),
      ),
  }
}
