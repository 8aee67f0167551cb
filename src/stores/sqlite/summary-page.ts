import type { StoreSummaryQuery, SummaryPage } from '../../core/ports.js'
import { decodeSummaryCursor, encodeSummaryCursor } from '../../core/summaries.js'
import { rowToSummary } from '../shared/summary-rows.js'
import type { Statements } from './statements.js'

/** Past every run_no SQLite can assign (the first page starts below it). */
const AFTER_LAST_RUN = Number.MAX_SAFE_INTEGER

/**
 * The largest code point: every id that starts with the prefix sorts at or above the prefix and
 * below `prefix + U+10FFFF` (only an id continuing with that non-character would be missed).
 */
const LAST_CHAR = String.fromCodePoint(0x10ffff)

/**
 * One page of summaries through an index: the rowid (`run_no`, creation order) without a
 * status, `skein_runs_status` with one; a prefix is a range on the run id. Reads `limit + 1`
 * rows to know whether another page exists.
 */
export function summaryPage(st: Statements, query: StoreSummaryQuery): SummaryPage {
  const { status, runIdPrefix: prefix, limit } = query
  const before = query.cursor === undefined ? AFTER_LAST_RUN : decodeSummaryCursor(query.cursor)
  const params: unknown[] = []
  if (status !== undefined) params.push(status)
  if (prefix !== undefined) params.push(prefix, prefix + LAST_CHAR)
  params.push(before, limit + 1)
  const filter =
    status === undefined
      ? prefix === undefined
        ? 'all'
        : 'prefix'
      : prefix === undefined
        ? 'status'
        : 'statusPrefix'
  const rows = st.summaries[filter].all(...params)
  if (rows.length <= limit) return { runs: rows.map(rowToSummary), nextCursor: null }
  rows.pop()
  return {
    runs: rows.map(rowToSummary),
    nextCursor: encodeSummaryCursor(rows[rows.length - 1].run_no),
  }
}
