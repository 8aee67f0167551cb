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
  const start = query.cursor === undefined ? runIds.length : decodeSummaryCursor(query.cursor) - 1
  const runs: RunSummary[] = []
  let i = Math.min(start, runIds.length) - 1
  for (; i >= 0 && runs.length < query.limit; i--) {
    const summary = await summarize(runIds[i])
    if (summaryMatches(summary, query)) runs.push(summary)
  }
  // i + 1 is the last index looked at: the next page starts below it, if anything is left.
  const nextCursor = i >= 0 ? encodeSummaryCursor(i + 2) : null
  return { runs, nextCursor }
}
