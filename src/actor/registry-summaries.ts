import { InvalidRequestError } from '../core/errors.js'
import type { RunSummary, StoreSummaryQuery, SummaryPage } from '../core/ports.js'
import { decodeSummaryCursor, encodeSummaryCursor, summaryMatches } from '../core/summaries.js'
import type { RegisteredRun, RunRegistry } from './run-registry.js'

/** Registry rows one page of summaries looks at, at most: a page may come back short. */
export const SUMMARY_SCAN_BUDGET = 250

/**
 * Run summaries on an actor host (docs/operating-runs.md, "Finding runs"): the run registry
 * walked in creation order (newest or oldest first), rows filtered first by the registry's own
 * columns (definition, run id prefix, creation time), then each remaining run's summary read
 * from its cell (`summarize`, which opens it) and checked against the rest of the filters
 * (status, attributes, update time). At most SUMMARY_SCAN_BUDGET rows per page: a page with
 * fewer than `limit` runs and a `nextCursor` means "more may match further on".
 */
export async function registrySummaryPage(
  registry: RunRegistry,
  query: StoreSummaryQuery,
  summarize: (runId: string) => Promise<RunSummary | undefined>,
): Promise<SummaryPage> {
  const order = query.order === 'oldest' ? 'oldest' : 'newest'
  let cursor = query.cursor === undefined ? undefined : String(decodeSummaryCursor(query.cursor))
  const runs: RunSummary[] = []
  let scanned = 0
  for (;;) {
    // Never more rows than runs still wanted: a page ends on a registry page's boundary, so
    // the registry's cursor is where the next page starts.
    const size = Math.min(query.limit - runs.length, SUMMARY_SCAN_BUDGET - scanned)
    const page = await registry.list({ cursor, limit: size, order })
    scanned += page.runs.length
    for (const run of page.runs) {
      if (!registryMatches(run, query)) continue
      const summary = await summarize(run.runId)
      if (summary && summaryMatches(summary, query)) runs.push(summary)
    }
    cursor = page.nextCursor
    if (cursor === undefined) return { runs, nextCursor: null }
    if (runs.length >= query.limit || scanned >= SUMMARY_SCAN_BUDGET) {
      return { runs, nextCursor: encodeSummaryCursor(positionOf(cursor)) }
    }
  }
}

/** The filters a registry row answers without opening the run's cell. */
function registryMatches(run: RegisteredRun, query: StoreSummaryQuery): boolean {
  return (
    (query.definitionName === undefined || run.definitionName === query.definitionName) &&
    (query.runIdPrefix === undefined || run.runId.startsWith(query.runIdPrefix)) &&
    (query.createdFrom === undefined || run.createdAt >= query.createdFrom) &&
    (query.createdBefore === undefined || run.createdAt < query.createdBefore) &&
    // A row without a version (recorded before versions were) is checked on the run itself.
    (query.definitionVersion === undefined ||
      run.definitionVersion === null ||
      run.definitionVersion === query.definitionVersion)
  )
}

/** A registry cursor as a summary cursor's position: the shipped registries' are positions. */
function positionOf(cursor: string): number {
  const position = Number(cursor)
  if (!Number.isSafeInteger(position) || position < 1) {
    throw new InvalidRequestError(
      'this run registry pages with cursors that are not positions (positive integers): run summaries need one that does, like sqliteRegistry, postgresRegistry and memoryRegistry',
    )
  }
  return position
}
