export type { BulkItem, BulkOptions, BulkResult, RunFilter } from '../core/bulk-types.js'

import type { EffectStatusView } from '../core/api-types.js'
import type { BulkItem, BulkOptions, BulkResult, RunFilter } from '../core/bulk-types.js'
import type { RunState } from '../core/envelope.js'
import { InvalidRequestError, SkeinError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import type { SummaryPage, SummaryQuery } from '../core/ports.js'

export const DEFAULT_BULK_MAX_RUNS = 1000
export const MAX_BULK_RUNS = 10_000
const DEFAULT_BATCH = 10
const MAX_BATCH = 100
const PAGE = 500
const FILTERS = [
  'status',
  'definitionName',
  'definitionVersion',
  'runIdPrefix',
  'createdFrom',
  'createdBefore',
  'updatedFrom',
  'updatedBefore',
] as const

/** What a bulk action needs of the engine. */
export interface BulkEngine {
  listRunSummaries(query: SummaryQuery): Promise<SummaryPage>
  inspectRun(runId: string): Promise<{ effects: EffectStatusView[] }>
  retryEffect(runId: string, effectId: string, caller?: { identity?: Json }): Promise<RunState>
  wake(runId: string): Promise<RunState>
  cancel(runId: string): Promise<RunState>
}

/** Effects an operator can retry (retryEffect's rule; a cancelled thread refuses it there). */
const RETRYABLE = new Set(['failed', 'ambiguous', 'timed_out'])

/**
 * A bulk action by filter (docs/operating-runs.md, "Bulk actions"): the matching runs, oldest
 * first and at most `maxRuns`, acted on `batchSize` at a time through the engine's own one-run
 * operations, so each run's rules and fencing hold as for one call (a second bulk retry running
 * at the same time finds the effects already retried and is refused them). An empty filter is
 * refused: "every run" must be said with a filter such as a status.
 */
export async function bulkAction(
  engine: BulkEngine,
  action: 'retry' | 'wake' | 'cancel',
  filter: RunFilter,
  options: BulkOptions = {},
  caller: { identity?: Json } = {},
): Promise<BulkResult> {
  const { result, runIds, batchSize } = await matchRuns(engine, action, filter, options)
  if (options.dryRun) return result
  await inBatches(result, runIds, batchSize, options, (runId) =>
    actOn(engine, action, runId, caller),
  )
  return result
}

/**
 * The runs matching `filter`, oldest first and at most `maxRuns`, and the empty result that
 * counts them (the filter and options checked first: a 400 with nothing done).
 */
export async function matchRuns(
  engine: Pick<BulkEngine, 'listRunSummaries'>,
  action: BulkResult['action'],
  filter: RunFilter,
  options: BulkOptions,
): Promise<{ result: BulkResult; runIds: string[]; batchSize: number }> {
  const { query, maxRuns, batchSize } = checkBulk(filter, options)
  const runIds: string[] = []
  let truncated = false
  let cursor: string | undefined
  do {
    const page = await engine.listRunSummaries({ ...query, order: 'oldest', limit: PAGE, cursor })
    for (const run of page.runs) {
      if (runIds.length === maxRuns) {
        truncated = true
        break
      }
      runIds.push(run.runId)
    }
    cursor = page.nextCursor ?? undefined
    if (cursor !== undefined && runIds.length === maxRuns) truncated = true
  } while (cursor !== undefined && !truncated)
  const result: BulkResult = {
    action,
    dryRun: options.dryRun === true,
    matched: runIds.length,
    truncated,
    done: [],
    refused: [],
  }
  return { result, runIds, batchSize }
}

/**
 * `act` on each run, `batchSize` at a time: what it returns is done (or refused, with a code),
 * what it throws is refused with the error's code and message.
 */
export async function inBatches(
  result: BulkResult,
  runIds: readonly string[],
  batchSize: number,
  options: BulkOptions,
  act: (runId: string) => Promise<BulkItem>,
): Promise<void> {
  for (let i = 0; i < runIds.length; i += batchSize) {
    await Promise.all(
      runIds.slice(i, i + batchSize).map(async (runId) => {
        try {
          const item = await act(runId)
          if (item.code === undefined) result.done.push(item)
          else result.refused.push(item)
        } catch (error) {
          result.refused.push(refusal(runId, error))
        }
      }),
    )
    options.onProgress?.({
      done: result.done.length,
      refused: result.refused.length,
      matched: result.matched,
    })
  }
}

async function actOn(
  engine: BulkEngine,
  action: 'retry' | 'wake' | 'cancel',
  runId: string,
  caller: { identity?: Json },
): Promise<BulkItem> {
  if (action === 'wake') {
    await engine.wake(runId)
    return { runId }
  }
  if (action === 'cancel') {
    await engine.cancel(runId)
    return { runId }
  }
  const { effects } = await engine.inspectRun(runId)
  const effectIds: string[] = []
  let last: BulkItem | undefined
  for (const effect of effects) {
    if (!RETRYABLE.has(effect.status)) continue
    try {
      await engine.retryEffect(runId, effect.effectId, caller)
      effectIds.push(effect.effectId)
    } catch (error) {
      last = refusal(runId, error)
    }
  }
  if (effectIds.length > 0) return { runId, effectIds }
  return (
    last ?? {
      runId,
      code: 'NOTHING_TO_RETRY',
      message: 'the run has no failed, timed-out or ambiguous effect',
    }
  )
}

function refusal(runId: string, error: unknown): BulkItem {
  if (!SkeinError.is(error))
    return { runId, code: 'ERROR', message: String((error as Error)?.message ?? error) }
  const item: BulkItem = { runId, code: error.code, message: error.message }
  // A refused migration says what differs (docs/deploys.md, "Migrating runs").
  const differences = (error.details as { differences?: unknown } | undefined)?.differences
  if (Array.isArray(differences) && differences.length > 0)
    item.differences = differences as BulkItem['differences']
  return item
}

function checkBulk(filter: RunFilter, options: BulkOptions) {
  if (filter === null || typeof filter !== 'object') {
    throw new InvalidRequestError('a bulk action needs a filter object')
  }
  const unknown = Object.keys(filter).filter((k) => !(FILTERS as readonly string[]).includes(k))
  if (unknown.length > 0) {
    throw new InvalidRequestError(`unknown filter field(s): ${unknown.join(', ')}`, {
      unknown,
      allowed: [...FILTERS],
    })
  }
  if (!FILTERS.some((name) => filter[name] !== undefined)) {
    throw new InvalidRequestError(
      'a bulk action refuses an empty filter: name the runs (a status, a definition, a time range, an id prefix, an attribute)',
    )
  }
  const maxRuns = options.maxRuns ?? DEFAULT_BULK_MAX_RUNS
  if (!Number.isInteger(maxRuns) || maxRuns < 1 || maxRuns > MAX_BULK_RUNS) {
    throw new InvalidRequestError(`maxRuns must be an integer from 1 to ${MAX_BULK_RUNS}`)
  }
  const batchSize = options.batchSize ?? DEFAULT_BATCH
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH) {
    throw new InvalidRequestError(`batchSize must be an integer from 1 to ${MAX_BATCH}`)
  }
  return { query: filter as SummaryQuery, maxRuns, batchSize }
}
