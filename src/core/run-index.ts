import type { EventEnvelope, RunStatus } from './envelope.js'
import { InvalidRequestError } from './errors.js'
import type { Json } from './json.js'
import type { ProjectorDefinition } from './projector.js'
import { RUN_DELETED } from './run-deletion.js'
import { RT } from './runtime-events.js'

/** One run as the built-in index projector keeps it (docs/projectors.md, "Run index"). */
export interface RunIndexEntry {
  runId: string
  kind: string
  definitionName: string
  definitionVersion: string
  status: RunStatus
  /** What the index's `tenant` option read from the start; null without one. */
  tenant: string | null
  createdAt: number
  updatedAt: number
  /** The last seq folded in (re-delivered events at or below it are skipped). */
  seq: number
}

/** Reads a run's tenant from its start: `{ runId, input }` of `runtime.run.started`. */
export type TenantOf = (start: { runId: string; input: Json }) => string | null | undefined

export interface RunIndexQuery {
  status?: RunStatus
  tenant?: string
  /** Page size, 1–1000; default 100. */
  limit?: number
  /** `nextCursor` of the previous page (same filters). */
  cursor?: string
}

export interface RunIndexPage {
  runs: RunIndexEntry[]
  nextCursor: string | null
}

export interface RunIndexOptions {
  /** The projector's name (its checkpoint); default `run-index`. */
  name?: string
  /** Reads the tenant from a run's start input; default none (tenant null). */
  tenant?: TenantOf
}

/** A run index kept by a projector: the projector to register, and reads. */
export interface RunIndex {
  readonly projector: ProjectorDefinition
  get(runId: string): Promise<RunIndexEntry | null>
  /** A page of runs, newest first (by creation time, then run id). */
  list(query?: RunIndexQuery): Promise<RunIndexPage>
  close?(): Promise<void>
}

/**
 * Folds one event into a run's index entry (pure; `undefined` before the first event). Events
 * at or below `entry.seq` change nothing, so a re-delivered batch is harmless. A run whose
 * start was trimmed before the index saw it gets empty kind and definition.
 */
export function indexEvent(
  entry: RunIndexEntry | undefined,
  event: EventEnvelope,
  tenantOf?: TenantOf,
): RunIndexEntry {
  if (entry && event.seq <= entry.seq) return entry
  const next: RunIndexEntry = entry
    ? { ...entry }
    : {
        runId: event.runId,
        kind: '',
        definitionName: '',
        definitionVersion: '',
        status: 'running',
        tenant: null,
        createdAt: event.ts,
        updatedAt: event.ts,
        seq: 0,
      }
  next.seq = event.seq
  next.updatedAt = Math.max(next.updatedAt, event.ts)
  const payload = event.payload as Record<string, any>
  switch (event.type) {
    case RT.runStarted:
      next.kind = payload.kind
      next.definitionName = payload.definitionName
      next.definitionVersion = payload.definitionVersion
      next.createdAt = event.ts
      next.tenant = tenantOf?.({ runId: event.runId, input: payload.input ?? null }) ?? null
      break
    case RT.runMigrated:
      next.definitionVersion = payload.toVersion
      break
    case RT.runQueued:
      next.status = 'queued'
      break
    case RT.runAdmitted:
      next.status = 'running'
      break
    case RT.runCompleted:
      next.status = 'completed'
      break
    case RT.runFailed:
      next.status = 'failed'
      break
    case RT.runCancelled:
      next.status = 'cancelled'
      break
    case RT.effectRetryScheduled:
      // An operator retry reopens a failed run (fold/effects.ts, reopenEffect).
      if (payload.reason === 'operator' && next.status === 'failed') next.status = 'running'
      break
  }
  return next
}

/**
 * A run's row after a batch of its feed: null when the run was deleted (the deletion record,
 * docs/data-lifecycle.md) and not started again since: the index drops its row.
 */
export function indexEvents(
  entry: RunIndexEntry | null | undefined,
  events: readonly EventEnvelope[],
  tenantOf?: TenantOf,
): RunIndexEntry | null {
  let next = entry ?? null
  for (const event of events) {
    if (event.type === RUN_DELETED) {
      // A record delivered again after a new run took the id is older than that run.
      if (next === null || next.createdAt <= event.ts) next = null
    } else {
      next = indexEvent(next ?? undefined, event, tenantOf)
    }
  }
  return next
}

const CURSOR = 'ri1.'

/** A page position: newest first by (createdAt, runId). Opaque to callers. */
export function encodeIndexCursor(createdAt: number, runId: string): string {
  return `${CURSOR}${createdAt.toString(36)}.${encodeURIComponent(runId)}`
}

export function decodeIndexCursor(cursor: string): [number, string] {
  const match = typeof cursor === 'string' ? /^ri1\.([0-9a-z]{1,11})\.(.+)$/.exec(cursor) : null
  if (match) {
    try {
      const createdAt = Number.parseInt(match[1], 36)
      if (Number.isSafeInteger(createdAt)) return [createdAt, decodeURIComponent(match[2])]
    } catch {}
  }
  throw new InvalidRequestError('cursor is not a cursor from a previous page of the run index', {
    cursor: String(cursor).slice(0, 64),
  })
}

/** The page size of a query (1–1000, default 100). */
export function indexLimit(query: RunIndexQuery): number {
  const limit = query.limit ?? 100
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new InvalidRequestError('limit must be an integer from 1 to 1000', { limit })
  }
  return limit
}
