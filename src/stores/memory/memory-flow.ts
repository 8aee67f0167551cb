import type { RunStatus } from '../../core/envelope.js'
import { isTerminal } from '../../core/envelope.js'
import type { FlowEntry, FlowKeyState, FlowStore } from '../../core/ports.js'

interface Row extends FlowEntry {
  /** Queueing order. */
  seq: number
  admittedAt: number | null
  holdUntil: number
}

/**
 * Flow control's queues of the memory store (one process). The rule is the SQL stores' (see
 * `FlowStore.admit`): a slot is an admitted entry whose run has not finished, or whose log does
 * not exist yet while its hold lasts.
 */
export function memoryFlow(statusOf: (runId: string) => RunStatus | undefined): FlowStore {
  const rows = new Map<string, Row>()
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
      if (gone) rows.delete(r.runId)
      return !gone
    })
  const waiting = (r: Row, now: number, own?: string) =>
    r.admittedAt === null && r.startAt <= now && (statusOf(r.runId) === 'queued' || r.runId === own)
  return {
    async admit({ queue, key, limit, now, holdUntil, enqueue }) {
      if (enqueue && !rows.has(enqueue.runId)) {
        rows.set(enqueue.runId, { ...enqueue, seq: ++seq, admittedAt: null, holdUntil: 0 })
      }
      const live = forget(now, ofKey(queue, key))
      const free = limit - live.filter((r) => r.admittedAt !== null).length
      if (free <= 0) return []
      const chosen = live
        .filter((r) => waiting(r, now, enqueue?.runId))
        .sort((a, b) => b.priority - a.priority || a.seq - b.seq)
        .slice(0, free)
      for (const r of chosen) {
        r.admittedAt = now
        r.holdUntil = holdUntil
      }
      return chosen.map((r) => r.runId)
    },
    async admitted(runId) {
      return (rows.get(runId)?.admittedAt ?? null) !== null
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
    async keys() {
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
