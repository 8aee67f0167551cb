import type { Json } from '../../core/json.js'
import type {
  AdmitRequest,
  AdmitResult,
  AppendAdmission,
  FlowKeyState,
  FlowStore,
} from '../../core/ports.js'
import { RATE_HISTORY_MS } from '../memory/memory-flow.js'
import { mergeRounds } from '../shared/flow-rounds.js'
import type { SqliteDatabase } from './driver.js'
import { lazyStatements } from './statements.js'
import { unsyncedWrite } from './unsynced-write.js'

type Call = <T>(action: string, fn: () => T) => Promise<T>

const FINISHED = `('completed', 'failed', 'cancelled')`
/**
 * A key's entries whose run finished, or whose admitted start never wrote its log within the
 * hold: forgotten before a key is counted (by an admission round and by a first append).
 */
const FORGET_FINISHED = `DELETE FROM skein_flow WHERE run_id IN (
  SELECT f.run_id FROM skein_flow f LEFT JOIN skein_runs r ON r.run_id = f.run_id
  WHERE f.queue = @queue AND f.flow_key = @key AND (r.status IN ${FINISHED}
    OR (r.status IS NULL AND f.admitted_at IS NOT NULL AND f.hold_until <= @now)))
  RETURNING run_id`

interface KeyRow {
  queue: string
  flow_key: string
  active: number
  queued: number
  recent: number
  oldest: number | null
}

interface WindowRow {
  run_id: string
  opened_at: number
  admitted_at: number | null
  enqueued_at: number
  status: string | null
}

/**
 * Flow control's queues in `skein_flow` (schema v10), rate admissions in `skein_flow_rate` and
 * debounce windows in `skein_flow_debounce` (v13; docs/flow-control.md). An admission round
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
    forget: lazy
      .prepare<[{ queue: string; key: string; now: number }], string>(FORGET_FINISHED)
      .pluck(),
    forgetWindow: lazy.prepare<[string]>('DELETE FROM skein_flow_debounce WHERE run_id = ?'),
    live: lazy
      .prepare<[{ queue: string; key: string; now: number; hold: number; own: string }], string>(
        `SELECT f.run_id FROM skein_flow f LEFT JOIN skein_runs r ON r.run_id = f.run_id
          WHERE f.queue = @queue AND f.flow_key = @key AND f.run_id <> @own
            AND (r.status NOT IN ${FINISHED} OR (r.status IS NULL AND (f.hold_until > @now
              OR (f.admitted_at IS NULL AND f.enqueued_at > 2 * @now - @hold))))
          ORDER BY f.seq LIMIT 1`,
      )
      .pluck(),
    pruneRate: lazy.prepare<[string, string, number]>(
      'DELETE FROM skein_flow_rate WHERE queue = ? AND flow_key = ? AND admitted_at <= ?',
    ),
    rateWindow: lazy.prepare<[string, string, number], { n: number; oldest: number | null }>(
      `SELECT count(*) AS n, min(admitted_at) AS oldest FROM skein_flow_rate
        WHERE queue = ? AND flow_key = ? AND admitted_at > ?`,
    ),
    recordRate: lazy.prepare<[string, string, number]>(
      'INSERT INTO skein_flow_rate (queue, flow_key, admitted_at) VALUES (?, ?, ?)',
    ),
    windows: lazy.prepare<[string, string], WindowRow>(
      `SELECT d.run_id, d.opened_at, f.admitted_at, f.enqueued_at, r.status
        FROM skein_flow_debounce d JOIN skein_flow f ON f.run_id = d.run_id
        LEFT JOIN skein_runs r ON r.run_id = d.run_id
        WHERE d.queue = ? AND d.debounce_key = ?`,
    ),
    closeWindows: lazy.prepare<[string, string]>(
      `DELETE FROM skein_flow_debounce WHERE queue = ? AND debounce_key = ? AND run_id IN (
        SELECT d.run_id FROM skein_flow_debounce d LEFT JOIN skein_flow f ON f.run_id = d.run_id
          LEFT JOIN skein_runs r ON r.run_id = d.run_id
          WHERE f.run_id IS NULL OR (r.status IS NOT NULL AND r.status <> 'queued'))`,
    ),
    joinWindow: lazy.prepare<[string, string]>(
      'UPDATE skein_flow_debounce SET input = ? WHERE run_id = ?',
    ),
    openWindow: lazy.prepare<[string, string, string, string, number]>(
      `INSERT INTO skein_flow_debounce (run_id, queue, debounce_key, input, opened_at)
        VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
    ),
    moveStart: lazy.prepare<[number, string]>(
      'UPDATE skein_flow SET start_at = ? WHERE run_id = ?',
    ),
    ownWindow: lazy
      .prepare<[string, string, string], number>(
        `SELECT d.opened_at FROM skein_flow_debounce d JOIN skein_flow f ON f.run_id = d.run_id
          WHERE d.run_id = ? AND d.queue = ? AND d.debounce_key = ? AND f.admitted_at IS NULL`,
      )
      .pluck(),
    orphans: lazy.prepare<[number, number], { run_id: string; queue: string; input: string }>(
      `SELECT d.run_id, d.queue, d.input FROM skein_flow_debounce d
        JOIN skein_flow f ON f.run_id = d.run_id LEFT JOIN skein_runs r ON r.run_id = d.run_id
        WHERE f.admitted_at IS NULL AND r.status IS NULL AND f.enqueued_at <= ?
        ORDER BY f.seq LIMIT ?`,
    ),
    abandoned: lazy.prepare<[number]>(
      `DELETE FROM skein_flow WHERE enqueued_at <= ?
        AND NOT EXISTS (SELECT 1 FROM skein_runs r WHERE r.run_id = skein_flow.run_id)
        AND NOT EXISTS (SELECT 1 FROM skein_flow_debounce d WHERE d.run_id = skein_flow.run_id)`,
    ),
    windowInput: lazy
      .prepare<[string], string>('SELECT input FROM skein_flow_debounce WHERE run_id = ?')
      .pluck(),
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
    anyWaiting: lazy
      .prepare<[{ queue: string; key: string; now: number }], number>(
        `SELECT 1 FROM skein_flow f JOIN skein_runs r ON r.run_id = f.run_id
          WHERE f.queue = @queue AND f.flow_key = @key AND f.admitted_at IS NULL
            AND f.start_at <= @now AND r.status = 'queued' LIMIT 1`,
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
    keys: lazy.prepare<[{ since: number }], KeyRow>(
      `SELECT f.queue, f.flow_key,
          sum(f.admitted_at IS NOT NULL) AS active,
          sum(f.admitted_at IS NULL AND r.status = 'queued') AS queued,
          (SELECT count(*) FROM skein_flow_rate w WHERE w.queue = f.queue
            AND w.flow_key = f.flow_key AND w.admitted_at > @since) AS recent,
          min(CASE WHEN f.admitted_at IS NULL AND r.status = 'queued' THEN f.enqueued_at END) AS oldest
        FROM skein_flow f LEFT JOIN skein_runs r ON r.run_id = f.run_id
        WHERE r.status IS NULL OR r.status NOT IN ${FINISHED}
        GROUP BY f.queue, f.flow_key ORDER BY f.queue, f.flow_key`,
    ),
  }))
  const admitRound = (request: AdmitRequest): AdmitResult => {
    const { queue, key, limit, now, holdUntil, enqueue: e, rate, skipIfLive } = request
    for (const runId of st.forget.all({ queue, key, now })) st.forgetWindow.run(runId)
    if (e && skipIfLive) {
      const existing = st.live.get({ queue, key, now, hold: holdUntil, own: e.runId })
      if (existing !== undefined) return { admitted: [], existing }
    }
    if (e) st.enqueue.run(e.runId, e.queue, e.key, e.priority, e.startAt, e.enqueuedAt)
    let free = limit - (st.active.get(queue, key) ?? 0)
    let window = { n: 0, oldest: null as number | null }
    if (rate) {
      st.pruneRate.run(queue, key, now - Math.max(2 * rate.periodMs, RATE_HISTORY_MS))
      window = st.rateWindow.get(queue, key, now - rate.periodMs) ?? window
      free = Math.min(free, rate.limit - window.n)
    }
    const chosen =
      free <= 0 ? [] : st.waiting.all({ queue, key, now, own: e?.runId ?? '', limit: free })
    for (const runId of chosen) {
      st.mark.run(now, holdUntil, runId)
      if (rate) st.recordRate.run(queue, key, now)
    }
    if (!rate || window.n + chosen.length < rate.limit) return { admitted: chosen }
    return { admitted: chosen, retryAt: (window.oldest ?? now) + rate.periodMs }
  }
  /** `enqueueAll`: a round per entry, in order, in one transaction. */
  const admitTx = db.transaction((request: AdmitRequest): AdmitResult => {
    const { enqueueAll, ...one } = request
    if (enqueueAll === undefined) return admitRound(one)
    return mergeRounds(enqueueAll.map((enqueue) => admitRound({ ...one, enqueue })))
  })
  const debounceTx = db.transaction((request: Parameters<FlowStore['debounce']>[0]) => {
    const { entry, key, periodMs, maxWaitMs, abandonedBefore } = request
    const now = entry.enqueuedAt
    const input = JSON.stringify(request.input)
    const endOf = (openedAt: number) =>
      Math.min(now + periodMs, maxWaitMs === undefined ? Infinity : openedAt + maxWaitMs)
    const own = st.ownWindow.get(entry.runId, entry.queue, key)
    if (own !== undefined) {
      const endsAt = endOf(own)
      st.joinWindow.run(input, entry.runId)
      st.moveStart.run(endsAt, entry.runId)
      return { runId: entry.runId, opened: true, endsAt }
    }
    st.closeWindows.run(entry.queue, key)
    for (const w of st.windows.all(entry.queue, key)) {
      const open =
        w.admitted_at === null &&
        (w.status === 'queued' || (w.status === null && w.enqueued_at > abandonedBefore))
      if (!open) continue
      const endsAt = endOf(w.opened_at)
      st.joinWindow.run(input, w.run_id)
      st.moveStart.run(endsAt, w.run_id)
      return { runId: w.run_id, opened: false, endsAt }
    }
    const endsAt = endOf(now)
    st.enqueue.run(entry.runId, entry.queue, entry.key, entry.priority, endsAt, now)
    st.openWindow.run(entry.runId, entry.queue, key, input, now)
    return { runId: entry.runId, opened: true, endsAt }
  })
  /** A write transaction; with `relaxed`, committed under `synchronous = NORMAL` (see above). */
  const write = <A, R>(tx: { immediate(arg: A): R }, arg: A): R =>
    unsyncedWrite(db, relaxed, () => tx.immediate(arg))
  return {
    // A new run's first append takes its slot (`sqliteSlotTaker`, in the group commit).
    admitsInAppend: true,
    // A round with nothing to queue and no run waiting admits nothing: it is answered from a
    // read, with no write transaction (the next round of the key forgets the finished entries).
    admit: (request) =>
      call(`admit ${request.queue} ${request.key}`, () =>
        request.enqueue === undefined &&
        request.enqueueAll === undefined &&
        st.anyWaiting.get({ queue: request.queue, key: request.key, now: request.now }) ===
          undefined
          ? { admitted: [] }
          : write(admitTx, request),
      ),
    debounce: (request) =>
      call(`debounce ${request.entry.queue} ${request.key}`, () => write(debounceTx, request)),
    admission: (runId) =>
      call(`read admission of ${runId}`, () => {
        const at = st.admitted.get(runId) ?? null
        if (at === null) return null
        const input = st.windowInput.get(runId)
        return input === undefined ? { at } : { at, input: JSON.parse(input) as Json }
      }),
    orphanedWindows: (before, limit) =>
      call('read orphaned debounce windows', () =>
        st.orphans.all(before, limit).map((r) => ({
          runId: r.run_id,
          queue: r.queue,
          input: JSON.parse(r.input) as Json,
        })),
      ),
    forgetAbandoned: (before) =>
      call('forget abandoned queue entries', () => st.abandoned.run(before).changes),
    pending: (now, stalledBefore, limit, after) =>
      call('read pending admissions', () => ({
        keys: st.pendingKeys
          .all({ now, queue: after?.queue ?? '', key: after?.key ?? '', limit })
          .map((r) => ({ queue: r.queue, key: r.flow_key })),
        stalled: st.stalled.all(stalledBefore),
      })),
    keys: (since) =>
      call('read flow keys', () =>
        st.keys.all({ since }).map(
          (r): FlowKeyState => ({
            queue: r.queue,
            key: r.flow_key,
            active: r.active ?? 0,
            queued: r.queued ?? 0,
            recentAdmissions: r.recent ?? 0,
            oldestQueuedAt: r.oldest ?? null,
          }),
        ),
      ),
  }
}

/**
 * A new run's slot taken in its first append (`AppendOptions.admit`), inside the group
 * commit's transaction (group-commit.ts): the append's write lock serializes it with every
 * admission round on the file. Forgets the key's finished entries; admits when no run of the
 * key waits and fewer than `limit` are admitted and not finished. False: nothing recorded.
 */
export function sqliteSlotTaker(
  db: SqliteDatabase,
): (runId: string, admit: AppendAdmission) => boolean {
  const st = lazyStatements(db, (lazy) => ({
    forget: lazy
      .prepare<[{ queue: string; key: string; now: number }], string>(FORGET_FINISHED)
      .pluck(),
    forgetWindow: lazy.prepare<[string]>('DELETE FROM skein_flow_debounce WHERE run_id = ?'),
    anyWaiting: lazy
      .prepare<[{ queue: string; key: string; now: number }], number>(
        `SELECT 1 FROM skein_flow f JOIN skein_runs r ON r.run_id = f.run_id
          WHERE f.queue = @queue AND f.flow_key = @key AND f.admitted_at IS NULL
            AND f.start_at <= @now AND r.status = 'queued' LIMIT 1`,
      )
      .pluck(),
    active: lazy
      .prepare<[string, string], number>(
        `SELECT count(*) FROM skein_flow
          WHERE queue = ? AND flow_key = ? AND admitted_at IS NOT NULL`,
      )
      .pluck(),
    take: lazy.prepare<[string, string, string, number, number, number, number, number]>(
      `INSERT INTO skein_flow (run_id, queue, flow_key, priority, start_at, enqueued_at,
          admitted_at, hold_until)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
    ),
  }))
  return (runId, { queue, key, limit, priority, now, holdUntil }) => {
    for (const gone of st.forget.all({ queue, key, now })) st.forgetWindow.run(gone)
    if (st.anyWaiting.get({ queue, key, now }) !== undefined) return false
    if ((st.active.get(queue, key) ?? 0) >= limit) return false
    return st.take.run(runId, queue, key, priority, now, now, now, holdUntil).changes > 0
  }
}
