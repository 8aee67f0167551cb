import type { EventStore, RunSummary, StoreSummaryQuery, SummaryPage } from '../core/ports.js'
import { decodeSummaryCursor, encodeSummaryCursor, summaryMatches } from '../core/summaries.js'

/**
 * Summary pages for a store without `listSummaries`: the order is `listRuns()` reversed (the
 * position is an index into it, plus one), and each run on the page is folded. Slow on large
 * stores, which is why the built-in stores keep summaries beside the log.
 */
export async function foldedSummaryPage(
  store: EventStore,
  query: StoreSummaryQuery,
  summarize: (runId: string) => Promise<RunSummary>,
): Promise<SummaryPage> {
  const runIds = await store.listRuns()
  const newest = query.order !== 'oldest'
  const from = query.cursor === undefined ? undefined : decodeSummaryCursor(query.cursor)
  // Position p is index p - 1; newest first the page after p starts at p - 2, oldest first at p.
  let i = newest
    ? Math.min(from === undefined ? runIds.length : from - 1, runIds.length) - 1
    : (from ?? 0)
  const runs: RunSummary[] = []
  for (; i >= 0 && i < runIds.length && runs.length < query.limit; i += newest ? -1 : 1) {
    const summary = await summarize(runIds[i])
    if (summaryMatches(summary, query)) runs.push(summary)
  }
  // i is the next index to look at: the next page starts there, if anything is left.
  const nextCursor = i >= 0 && i < runIds.length ? encodeSummaryCursor(newest ? i + 2 : i) : null
  return { runs, nextCursor }
}
