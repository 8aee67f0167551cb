import type { RunStatus } from '../../core/envelope.js'
import { isTerminal } from '../../core/envelope.js'
import type { Json } from '../../core/json.js'
import type {
  AdmitRequest,
  AdmitResult,
  FlowEntry,
  FlowKeyState,
  FlowStore,
} from '../../core/ports.js'
import { mergeRounds } from '../shared/flow-rounds.js'

interface Row extends FlowEntry {
  /** Queueing order. */
  seq: number
  admittedAt: number | null
  holdUntil: number
}

interface Window {
  queue: string
  key: string
  runId: string
  input: Json
  openedAt: number
}

/** How long a key's rate admissions are kept at least (`keys()` reports the last minute's). */
export const RATE_HISTORY_MS = 60_000

/**
 * Flow control's queues of the memory store (one process). The rule is the SQL stores' (see
 * `FlowStore.admit`): a slot is an admitted entry whose run has not finished, or whose log does
 * not exist yet while its hold lasts.
 */
export function memoryFlow(statusOf: (runId: string) => RunStatus | undefined): FlowStore {
  const rows = new Map<string, Row>()
  /** Admission times per `queue\nkey` of rate-limited keys. */
  const rates = new Map<string, number[]>()
  /** Debounce windows by run id. */
  const windows = new Map<string, Window>()
  let seq = 0
  const ofKey = (queue: string, key: string) =>
    [...rows.values()].filter((r) => r.queue === queue && r.key === key)
  /** Entries of finished runs, and holds of starts that never wrote their log, go. */
  const forget = (now: number, of: Row[]): Row[] =>
    of.filter((r) => {
      const status = statusOf(r.runId)
      const gone =
        (status !== undefined && isTerminal(status)) ||
        (status === undefined && r.admittedAt !== null && r.holdUntil <= now)
      if (gone) {
        rows.delete(r.runId)
        windows.delete(r.runId)
      }
      return !gone
    })
  const waiting = (r: Row, now: number, own?: string) =>
    r.admittedAt === null && r.startAt <= now && (statusOf(r.runId) === 'queued' || r.runId === own)
  /**
   * Queued (its log says so), admitted and not finished, or a start still writing its log
   * (within its hold: `holdUntil - now` after it queued, or after it was admitted).
   */
  const live = (r: Row, now: number, holdUntil: number) => {
    const status = statusOf(r.runId)
    if (status !== undefined) return !isTerminal(status)
    return r.admittedAt === null ? r.enqueuedAt > 2 * now - holdUntil : r.holdUntil > now
  }
  const admitRound = ({
    queue,
    key,
    limit,
    now,
    holdUntil,
    enqueue,
    rate,
    skipIfLive,
  }: AdmitRequest): AdmitResult => {
    let current = forget(now, ofKey(queue, key))
    if (enqueue && skipIfLive) {
      const existing = current.find((r) => r.runId !== enqueue.runId && live(r, now, holdUntil))
      if (existing) return { admitted: [], existing: existing.runId }
    }
    if (enqueue && !rows.has(enqueue.runId)) {
      const row = { ...enqueue, seq: ++seq, admittedAt: null, holdUntil: 0 }
      rows.set(enqueue.runId, row)
      current = [...current, row]
    }
    const id = `${queue}\n${key}`
    const kept = rate ? now - Math.max(2 * rate.periodMs, RATE_HISTORY_MS) : now
    const times = rate ? (rates.get(id) ?? []).filter((t) => t > kept) : []
    const inWindow = rate ? times.filter((t) => t > now - rate.periodMs) : []
    const free = Math.min(
      limit - current.filter((r) => r.admittedAt !== null).length,
      rate ? rate.limit - inWindow.length : Number.POSITIVE_INFINITY,
    )
    const chosen =
      free <= 0
        ? []
        : current
            .filter((r) => waiting(r, now, enqueue?.runId))
            .sort((a, b) => b.priority - a.priority || a.seq - b.seq)
            .slice(0, free)
    for (const r of chosen) {
      r.admittedAt = now
      r.holdUntil = holdUntil
    }
    if (!rate) return { admitted: chosen.map((r) => r.runId) }
    for (const _ of chosen) {
      times.push(now)
      inWindow.push(now)
    }
    rates.set(id, times)
    const full = inWindow.length >= rate.limit
    const result = { admitted: chosen.map((r) => r.runId) }
    return full ? { ...result, retryAt: Math.min(...inWindow) + rate.periodMs } : result
  }
  return {
    async admit(request) {
      const { enqueueAll, ...one } = request
      if (enqueueAll === undefined) return admitRound(one)
      return mergeRounds(enqueueAll.map((enqueue) => admitRound({ ...one, enqueue })))
    },
    async admission(runId) {
      const row = rows.get(runId)
      if (!row || row.admittedAt === null) return null
      const window = windows.get(runId)
      return window ? { at: row.admittedAt, input: window.input } : { at: row.admittedAt }
    },
    async debounce({ entry, key, input, periodMs, maxWaitMs, abandonedBefore }) {
      const now = entry.enqueuedAt
      const endOf = (openedAt: number) =>
        Math.min(now + periodMs, maxWaitMs === undefined ? Infinity : openedAt + maxWaitMs)
      const own = windows.get(entry.runId)
      const ownRow = rows.get(entry.runId)
      if (own?.queue === entry.queue && own.key === key && ownRow?.admittedAt === null) {
        own.input = input
        ownRow.startAt = endOf(own.openedAt)
        return { runId: entry.runId, opened: true, endsAt: ownRow.startAt }
      }
      for (const [runId, window] of windows) {
        if (window.queue !== entry.queue || window.key !== key) continue
        const row = rows.get(runId)
        const status = statusOf(runId)
        const open =
          row !== undefined &&
          row.admittedAt === null &&
          (status === 'queued' || (status === undefined && row.enqueuedAt > abandonedBefore))
        if (open) {
          window.input = input
          row.startAt = endOf(window.openedAt)
          return { runId, opened: false, endsAt: row.startAt }
        }
        // A closed window's input was read when its run was admitted (its log is past queued).
        if (status !== undefined && status !== 'queued') windows.delete(runId)
      }
      const endsAt = endOf(now)
      if (!rows.has(entry.runId)) {
        rows.set(entry.runId, {
          ...entry,
          startAt: endsAt,
          seq: ++seq,
          admittedAt: null,
          holdUntil: 0,
        })
      }
      windows.set(entry.runId, {
        queue: entry.queue,
        key,
        runId: entry.runId,
        input,
        openedAt: now,
      })
      return { runId: entry.runId, opened: true, endsAt }
    },
    async orphanedWindows(before, limit) {
      return [...windows.values()]
        .map((w) => ({ w, row: rows.get(w.runId) }))
        .filter(
          ({ w, row }) =>
            row?.admittedAt === null && row.enqueuedAt <= before && statusOf(w.runId) === undefined,
        )
        .sort((a, b) => (a.row?.seq ?? 0) - (b.row?.seq ?? 0))
        .slice(0, limit)
        .map(({ w }) => ({ runId: w.runId, queue: w.queue, input: w.input }))
    },
    async forgetAbandoned(before) {
      let forgotten = 0
      for (const r of [...rows.values()]) {
        if (r.enqueuedAt > before || windows.has(r.runId) || statusOf(r.runId) !== undefined)
          continue
        rows.delete(r.runId)
        forgotten++
      }
      return forgotten
    },
    async pending(now, stalledBefore, limit, after) {
      const keys = new Map<string, { queue: string; key: string }>()
      const stalled: string[] = []
      const later = (r: Row) =>
        !after ||
        compare(r.queue, after.queue) > 0 ||
        (r.queue === after.queue && compare(r.key, after.key) > 0)
      for (const r of rows.values()) {
        if (waiting(r, now) && later(r)) keys.set(`${r.queue}\n${r.key}`, r)
        if (r.admittedAt !== null && r.admittedAt < stalledBefore) {
          if (statusOf(r.runId) === 'queued') stalled.push(r.runId)
        }
      }
      const sorted = [...keys.values()]
        .map(({ queue, key }) => ({ queue, key }))
        .sort((a, b) => compare(a.queue, b.queue) || compare(a.key, b.key))
      return { keys: sorted.slice(0, limit), stalled }
    },
    async keys(since) {
      const out = new Map<string, FlowKeyState>()
      for (const r of rows.values()) {
        const status = statusOf(r.runId)
        if (status !== undefined && isTerminal(status)) continue
        const id = `${r.queue}\n${r.key}`
        const state = out.get(id) ?? {
          queue: r.queue,
          key: r.key,
          active: 0,
          queued: 0,
          recentAdmissions: (rates.get(id) ?? []).filter((t) => t > since).length,
          oldestQueuedAt: null,
        }
        if (r.admittedAt !== null) state.active++
        else if (status === 'queued') {
          state.queued++
          state.oldestQueuedAt = Math.min(state.oldestQueuedAt ?? r.enqueuedAt, r.enqueuedAt)
        }
        out.set(id, state)
      }
      return [...out.values()].sort((a, b) => compare(a.queue, b.queue) || compare(a.key, b.key))
    },
  }
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
