import type { MigrationDifference } from './kind.js'
import type { SummaryQuery } from './ports.js'

/** Which runs a bulk action acts on: the filters of `listRunSummaries` (at least one). */
export type RunFilter = Omit<SummaryQuery, 'limit' | 'cursor' | 'order'>

export interface BulkOptions {
  /** Count the matching runs and act on none (the result's `matched`); a migration checks each. */
  dryRun?: boolean
  /** At most this many runs, oldest first (default 1000, at most 10 000); `truncated` says more matched. */
  maxRuns?: number
  /** Runs acted on at a time (default 10, 1 to 100). */
  batchSize?: number
  /** Called after each batch with the runs done and refused so far. */
  onProgress?(progress: { done: number; refused: number; matched: number }): void
}

/** One run a bulk action did or refused. */
export interface BulkItem {
  runId: string
  /** What was done: the effects retried (retry). */
  effectIds?: string[]
  /** The version the run was on (migrate; equal to the target when it was there already). */
  fromVersion?: string
  /** Why it was refused: the error code and message (e.g. EFFECT_NOT_RETRYABLE). */
  code?: string
  message?: string
  /** Why a migration is unsafe (code MIGRATION_REFUSED): what differs. */
  differences?: MigrationDifference[]
}

export interface BulkResult {
  action: 'retry' | 'wake' | 'cancel' | 'migrate'
  dryRun: boolean
  /** Runs that matched the filter (up to `maxRuns`). */
  matched: number
  /** True when more runs matched than `maxRuns`: run the action again for the rest. */
  truncated: boolean
  done: BulkItem[]
  refused: BulkItem[]
}
