import type { RunAttributes } from '../../core/attributes.js'
import { claimFree, type HeldClaim } from '../../core/claim-rule.js'
import { type EventEnvelope, isTerminal, type RunStatus } from '../../core/envelope.js'
import {
  IdempotencyConflictError,
  InvalidRequestError,
  SeqConflictError,
} from '../../core/errors.js'
import type {
  ActiveRunCount,
  DefinitionVersionKey,
  DeletedRun,
  EventListener,
  EventStore,
  LeaseStore,
  LogBounds,
  RunMeta,
  RunSummary,
  SnapshotStore,
} from '../../core/ports.js'
import { deletionRecord } from '../../core/run-deletion.js'
import { EVERY_CAPABILITY } from '../../core/store-capabilities.js'
import { decodeSummaryCursor, encodeSummaryCursor, summaryMatches } from '../../core/summaries.js'
import { attributesAfter } from '../shared/attribute-events.js'
import { checkClaim, toLease } from '../shared/lease-rule.js'
import { sortKeys } from '../shared/recorded-keys.js'
import { checkTrimmedLog, runHeldError, trimmedTail } from '../shared/trimmed-log.js'
import { memoryClaims } from './memory-claims.js'
import { memoryFeed } from './memory-feed.js'
import { memoryFlow } from './memory-flow.js'
import { memorySchedules, memoryWaitUrls } from './memory-schedules.js'
import { memorySnapshotStore } from './memory-snapshot-store.js'
import { memoryWorkerTasks } from './memory-worker-tasks.js'

interface RunLog {
  /** events[i] has seq head + i. */
  events: EventEnvelope[]
  head: number
  tail: number
  /** Append keys, each with the tail its append left. */
  keys: Map<string, number>
  meta?: RunMeta
  /** The attributes its events set (`attributesAfter`). */
  attributes?: RunAttributes
  listeners: Set<EventListener>
  /** Position in creation order (1, 2, …) from the first append that wrote; 0 before. */
  position: number
}

const versionKeyOf = (v: DefinitionVersionKey): string =>
  JSON.stringify([v.kind, v.definitionName, v.definitionVersion])

/**
 * The in-memory event store: the default, and **lost when the process exits**. Envelopes are
 * shared with readers, not copied: treat them as immutable.
 */
export function memoryStore(options: { snapshots?: SnapshotStore } = {}): EventStore {
  const runs = new Map<string, RunLog>()
  /** Run ids in creation order: `created[position - 1]` (summary pages walk it backwards). */
  const created: string[] = []
  /** No run before this position is left (deleted runs leave '' in `created`). */
  let oldest = 0
  const snapshots = options.snapshots ?? memorySnapshotStore()
  const leaseOf = new Map<string, HeldClaim>()
  const leases: LeaseStore = {
    shared: false,
    async readLease(runId) {
      const stored = leaseOf.get(runId)
      return stored ? toLease(runId, stored) : null
    },
    async renewLease(runId, claim) {
      checkClaim(runId, leaseOf.get(runId) ?? null, claim)
      const stored = { owner: claim.owner, epoch: claim.epoch, expiresAt: claim.expiresAt }
      leaseOf.set(runId, stored)
      return toLease(runId, stored)
    },
    async releaseLease(runId, owner, epoch) {
      const stored = leaseOf.get(runId)
      if (stored && stored.owner === owner && stored.epoch === epoch) stored.expiresAt = 0
    },
    async claimDue(owner, now, expiresAt, limit, only) {
      const due: Array<{ runId: string; epoch: number; nextDeadlineAt: number }> = []
      const executable = only && new Set(only.map(versionKeyOf))
      for (const [runId, log] of runs) {
        const at = log.meta?.nextDeadlineAt
        if (at === null || at === undefined || at > now) continue
        if (executable && !executable.has(versionKeyOf(log.meta!))) continue
        const stored = leaseOf.get(runId) ?? null
        if (!claimFree(stored, now)) continue
        due.push({ runId, epoch: (stored?.epoch ?? 0) + 1, nextDeadlineAt: at })
      }
      due.sort((a, b) => a.nextDeadlineAt - b.nextDeadlineAt)
      due.length = Math.min(due.length, Math.max(0, limit))
      for (const { runId, epoch } of due) leaseOf.set(runId, { owner, epoch, expiresAt })
      return due
    },
    async markDue(runId, at) {
      const meta = runs.get(runId)?.meta
      if (meta && (meta.nextDeadlineAt === null || meta.nextDeadlineAt > at))
        meta.nextDeadlineAt = at
    },
  }
  const waitUrls = memoryWaitUrls()
  const workerTasks = memoryWorkerTasks()
  const flow = memoryFlow((runId) => runs.get(runId)?.meta?.status)
  /** Removes the run whole and records its deletion in the feed (`deleteRun`, `deleteFinished`). */
  const remove = (runId: string, log: RunLog, at: number, reason: string): DeletedRun => {
    runs.delete(runId)
    if (log.position > 0) created[log.position - 1] = ''
    leaseOf.delete(runId)
    waitUrls.forgetRun(runId)
    workerTasks.forgetRun(runId)
    void snapshots.prune(runId, 0)
    feed.deleted(log.events, (position) => deletionRecord(runId, log.tail, at, reason, position))
    // Live readers keep listening: a later run with this id reaches them as a new run.
    if (log.listeners.size > 0) logOf(runId).listeners = log.listeners
    return { runId, tail: log.tail, status: log.meta?.status ?? null }
  }
  const claims = memoryClaims()
  const feed = memoryFeed((runId) => runs.get(runId)?.events, claims.holds)
  const logOf = (runId: string): RunLog => {
    let log = runs.get(runId)
    if (!log) {
      log = { events: [], head: 1, tail: 0, keys: new Map(), listeners: new Set(), position: 0 }
      runs.set(runId, log)
    }
    return log
  }

  return {
    snapshots,
    // Appends are never durable here: nothing to flush.
    capabilities: { ...EVERY_CAPABILITY, flush: false },
    leases,
    claims: claims.claims,
    feed: feed.feed,
    schedules: memorySchedules(),
    waitUrls,
    flow,
    workerTasks,
    async append(runId, events, { expectedSeq, idempotencyKey, meta, lease }) {
      const log = runs.get(runId)
      const tail = log?.tail ?? 0
      if (tail !== expectedSeq) {
        throw new SeqConflictError(
          `run ${runId}: expected tail ${expectedSeq} but the log is at ${tail}`,
          { runId, expectedSeq, tail },
        )
      }
      if (idempotencyKey !== undefined && log?.keys.has(idempotencyKey)) {
        throw new IdempotencyConflictError(
          `run ${runId}: idempotency key "${idempotencyKey}" is already recorded`,
          { runId, idempotencyKey },
        )
      }
      for (let i = 0; i < events.length; i++) {
        if (events[i].seq !== expectedSeq + i + 1 || events[i].runId !== runId) {
          throw new InvalidRequestError(`run ${runId}: batch seqs must continue the log`, {
            runId,
          })
        }
      }
      if (lease) {
        checkClaim(runId, leaseOf.get(runId) ?? null, lease)
        leaseOf.set(runId, { owner: lease.owner, epoch: lease.epoch, expiresAt: lease.expiresAt })
      }
      if (events.length === 0 && !meta) return
      const target = log ?? logOf(runId)
      if (target.position === 0) target.position = created.push(runId)
      for (const event of events) target.events.push(event)
      target.tail = expectedSeq + events.length
      if (idempotencyKey !== undefined) target.keys.set(idempotencyKey, target.tail)
      if (meta) target.meta = { ...meta }
      target.attributes = attributesAfter(target.attributes, events)
      if (events.length > 0) feed.committed(events)
      // Listeners see committed events; one that throws never fails the append or the others.
      if (events.length > 0) {
        for (const listener of target.listeners) {
          try {
            listener(events)
          } catch {}
        }
      }
    },
    idempotencyKeys: {
      async list(runId) {
        const log = runs.get(runId)
        if (!log || log.tail === 0) return []
        return sortKeys([...log.keys].map(([key, seq]) => ({ key, seq })))
      },
      async restore(runId, keys) {
        const log = runs.get(runId)
        if (!log || log.tail === 0) return
        for (const { key, seq } of keys) if (!log.keys.has(key)) log.keys.set(key, seq)
      },
    },
    async restoreTrimmed(runId, trimmed) {
      const head = checkTrimmedLog(runId, trimmed)
      const held = runs.get(runId)
      if (held && held.tail > 0) throw runHeldError(runId, held.tail)
      // One process: the snapshot's save starts and the log is written in the same turn (the
      // memory snapshot store saves at once), so no reader sees one without the other.
      const saved = snapshots.save(trimmed.snapshot)
      const { events } = trimmed
      const target = held ?? logOf(runId)
      if (target.position === 0) target.position = created.push(runId)
      target.events = [...events]
      target.head = head
      target.tail = trimmedTail(trimmed)
      target.meta = { ...trimmed.meta }
      target.attributes = trimmed.attributes ?? attributesAfter(undefined, events)
      try {
        await saved
      } catch (error) {
        Object.assign(target, { events: [], head: 1, tail: 0, meta: undefined })
        throw error
      }
      if (events.length === 0) return
      feed.committed(events)
      for (const listener of target.listeners) {
        try {
          listener(events)
        } catch {}
      }
    },
    async read(runId, { fromSeq = 1, limit } = {}) {
      const log = runs.get(runId)
      if (!log) return []
      const start = Math.max(0, fromSeq - log.head)
      const end = limit === undefined ? log.events.length : start + Math.max(0, limit)
      return log.events.slice(start, end)
    },
    async tail(runId) {
      return runs.get(runId)?.tail ?? 0
    },
    async bounds(runId): Promise<LogBounds> {
      const log = runs.get(runId)
      if (!log || log.tail === 0) return { head: 0, tail: 0 }
      return { head: log.events.length ? log.head : log.tail + 1, tail: log.tail }
    },
    async listRuns() {
      const ids: string[] = []
      for (const [runId, log] of runs) if (log.tail > 0) ids.push(runId)
      return ids
    },
    async trim(runId, beforeSeq) {
      const log = runs.get(runId)
      if (!log) return 0
      const cut = Math.min(log.events.length, Math.max(0, beforeSeq - log.head))
      if (cut === 0) return 0
      log.events = log.events.slice(cut)
      log.head += cut
      feed.trimmed(cut, (event) => {
        const owner = runs.get(event.runId)
        return owner !== undefined && event.seq < owner.head
      })
      return cut
    },
    subscribe(runId, listener) {
      const log = logOf(runId)
      log.listeners.add(listener)
      return () => {
        log.listeners.delete(listener)
      }
    },
    async listSummaries(query) {
      const page: RunSummary[] = []
      const newest = query.order !== 'oldest'
      // Positions are 1-based (index + 1): a cursor at position p continues with the run at
      // index p - 2 newest first, at index p oldest first.
      const from = query.cursor === undefined ? undefined : decodeSummaryCursor(query.cursor)
      let i = newest ? (from === undefined ? created.length : from - 1) - 1 : (from ?? 0)
      // One more than asked for tells whether a next page exists.
      for (; i >= 0 && i < created.length && page.length <= query.limit; i += newest ? -1 : 1) {
        const log = runs.get(created[i])
        if (!log?.meta) continue
        const summary: RunSummary = { runId: created[i], ...log.meta }
        if (log.attributes) summary.attributes = log.attributes
        if (summaryMatches(summary, query)) page.push(summary)
      }
      if (page.length <= query.limit) return { runs: page, nextCursor: null }
      page.pop()
      const last = runs.get(page[page.length - 1].runId) as RunLog
      return { runs: page, nextCursor: encodeSummaryCursor(last.position) }
    },
    async deleteRun(runId, { at, reason, statuses }) {
      const log = runs.get(runId)
      if (!log || log.tail === 0) return null
      if (statuses && !statuses.includes(log.meta?.status as RunStatus)) return null
      return remove(runId, log, at, reason)
    },
    async deleteFinished({ statuses, updatedBefore, limit, at, reason, runs: only }) {
      const batch: Array<[string, RunLog]> = []
      if (only) {
        for (const { runId, tail } of only) {
          const log = runs.get(runId)
          if (log && log.tail === tail && statuses.includes(log.meta?.status as RunStatus)) {
            batch.push([runId, log])
          }
        }
        return batch.map(([runId, log]) => remove(runId, log, at, reason))
      }
      while (oldest < created.length && created[oldest] === '') oldest++
      for (let i = oldest; i < created.length && batch.length < limit; i++) {
        const log = created[i] === '' ? undefined : runs.get(created[i])
        const meta = log?.meta
        if (!log || !meta || meta.updatedAt >= updatedBefore) continue
        if (statuses.includes(meta.status)) batch.push([created[i], log])
      }
      return batch.map(([runId, log]) => remove(runId, log, at, reason))
    },
    async listRunsWithDeadlines() {
      const out: Array<{ runId: string; nextDeadlineAt: number }> = []
      for (const [runId, log] of runs) {
        const at = log.meta?.nextDeadlineAt
        if (at !== null && at !== undefined) out.push({ runId, nextDeadlineAt: at })
      }
      return out
    },
    async countActiveRuns() {
      const counts = new Map<string, ActiveRunCount>()
      for (const [runId, log] of runs) {
        const meta = log.meta
        if (!meta || isTerminal(meta.status)) continue
        const key = JSON.stringify([meta.kind, meta.definitionName, meta.definitionVersion])
        const count = counts.get(key)
        if (count) {
          count.runs++
          if (runId < count.sampleRunId) count.sampleRunId = runId
        } else
          counts.set(key, {
            kind: meta.kind,
            definitionName: meta.definitionName,
            definitionVersion: meta.definitionVersion,
            runs: 1,
            sampleRunId: runId,
          })
      }
      return [...counts.values()]
    },
    async close() {},
  }
}
