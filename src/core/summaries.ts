import { attributesMatch, normalizeAttributeFilters, type RunAttributeType } from './attributes.js'
import type { RunStatus } from './envelope.js'
import { InvalidRequestError } from './errors.js'
import type { RunSummary, StoreSummaryQuery, SummaryQuery } from './ports.js'

export const DEFAULT_SUMMARY_LIMIT = 100
export const MAX_SUMMARY_LIMIT = 1000
const MAX_PREFIX_LENGTH = 256
const STATUSES: ReadonlySet<string> = new Set([
  'queued',
  'running',
  'completed',
  'failed',
  'cancelled',
])

/**
 * Checks a query before any store access (every bad field is a 400 INVALID_REQUEST).
 * `attributeTypes`: the attribute names the engine's definitions declare, with their types.
 */
export function normalizeSummaryQuery(
  query: SummaryQuery = {},
  attributeTypes: ReadonlyMap<string, RunAttributeType> = new Map(),
): StoreSummaryQuery {
  if (query === null || typeof query !== 'object') {
    throw new InvalidRequestError('summary query must be an object')
  }
  const { status, cursor, limit = DEFAULT_SUMMARY_LIMIT, order = 'newest' } = query
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SUMMARY_LIMIT) {
    throw new InvalidRequestError(`limit must be an integer from 1 to ${MAX_SUMMARY_LIMIT}`, {
      limit: String(limit),
    })
  }
  if (order !== 'newest' && order !== 'oldest') {
    throw new InvalidRequestError('order must be "newest" or "oldest"', { order: String(order) })
  }
  const out: StoreSummaryQuery = { limit, order }
  if (status !== undefined) {
    const list: unknown[] = Array.isArray(status) ? status : [status]
    if (list.length === 0 || list.some((s) => typeof s !== 'string' || !STATUSES.has(s))) {
      throw new InvalidRequestError(`status must be one or more of ${[...STATUSES].join(', ')}`, {
        status: String(status),
      })
    }
    out.status = [...new Set(list as RunStatus[])]
  }
  for (const name of ['runIdPrefix', 'definitionName', 'definitionVersion'] as const) {
    const value = query[name]
    if (value === undefined) continue
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_PREFIX_LENGTH) {
      throw new InvalidRequestError(
        `${name} must be a string of 1 to ${MAX_PREFIX_LENGTH} characters`,
      )
    }
    out[name] = value
  }
  for (const name of ['createdFrom', 'createdBefore', 'updatedFrom', 'updatedBefore'] as const) {
    const value = query[name]
    if (value === undefined) continue
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new InvalidRequestError(`${name} must be a time in epoch ms (an integer >= 0)`, {
        [name]: String(value),
      })
    }
    out[name] = value
  }
  if (query.attributes !== undefined) {
    out.attributes = normalizeAttributeFilters(query.attributes, attributeTypes)
  }
  if (cursor !== undefined) {
    decodeSummaryCursor(cursor)
    out.cursor = cursor
  }
  return out
}

const CURSOR_PREFIX = 'rs1.'

/**
 * A cursor names a position in a store's creation order (a positive integer every run gets
 * when it is first written). It is opaque to callers: a prefix plus base-36 digits.
 */
export function encodeSummaryCursor(position: number): string {
  return `${CURSOR_PREFIX}${position.toString(36)}`
}

/** The position a cursor names; a cursor this code did not make is a 400. */
export function decodeSummaryCursor(cursor: unknown): number {
  const digits =
    typeof cursor === 'string' && cursor.startsWith(CURSOR_PREFIX)
      ? cursor.slice(CURSOR_PREFIX.length)
      : ''
  const position = /^[0-9a-z]{1,11}$/.test(digits) ? Number.parseInt(digits, 36) : Number.NaN
  if (!Number.isSafeInteger(position) || position < 1) {
    throw new InvalidRequestError('cursor is not a cursor from a previous page of run summaries', {
      cursor: String(cursor).slice(0, 64),
    })
  }
  return position
}

/** True when a summary passes the query's filters (stores that filter in memory use it). */
export function summaryMatches(summary: RunSummary, query: StoreSummaryQuery): boolean {
  return (
    (query.status === undefined || query.status.includes(summary.status)) &&
    (query.runIdPrefix === undefined || summary.runId.startsWith(query.runIdPrefix)) &&
    (query.definitionName === undefined || summary.definitionName === query.definitionName) &&
    (query.definitionVersion === undefined ||
      summary.definitionVersion === query.definitionVersion) &&
    (query.createdFrom === undefined || summary.createdAt >= query.createdFrom) &&
    (query.createdBefore === undefined || summary.createdAt < query.createdBefore) &&
    (query.updatedFrom === undefined || summary.updatedAt >= query.updatedFrom) &&
    (query.updatedBefore === undefined || summary.updatedAt < query.updatedBefore) &&
    (query.attributes === undefined || attributesMatch(summary.attributes, query.attributes))
  )
}
