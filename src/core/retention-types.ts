import type { ArchiveSink } from './archive-types.js'
import type { RunStatus } from './envelope.js'

/** `createEngine({ retention })` (docs/data-lifecycle.md, "Retention"). */
export interface RetentionOptions {
  /** A finished run is deleted once it has not changed for this long (ms, > 0). */
  finishedAfterMs: number
  /** Which finished runs (default all three: completed, failed, cancelled). */
  statuses?: readonly RunStatus[]
  /** Runs deleted per transaction (default 500, at most 10,000). */
  batchSize?: number
  /** How often a sweep runs (default 60 s). */
  intervalMs?: number
  /**
   * Archives each run before deleting it (docs/data-lifecycle.md, "Archives"): a run is
   * deleted only once the sink holds it durably, and only while it is as archived.
   */
  archive?: ArchiveSink
}

/** What `GET /operations/retention` answers. */
export interface RetentionStatus {
  enabled: boolean
  finishedAfterMs?: number
  statuses?: readonly RunStatus[]
  batchSize?: number
  intervalMs?: number
  /** Whether this process holds `sweep:retention` now (another process sweeps otherwise). */
  holding?: boolean
  /** Runs this process deleted since it started. */
  deletedTotal?: number
  /** The archive sink's name, when runs are archived before deletion. */
  archive?: string
  /** Runs this process archived since it started (each run once per sweep that wrote it). */
  archivedTotal?: number
  /** The last sweep this process ran (null before the first). */
  lastSweep?: RetentionSweep | null
}

export interface RetentionSweep {
  startedAt: number
  finishedAt: number | null
  /** Deleted finished runs last updated before this time. */
  cutoff: number
  deleted: number
  batches: number
  /** Runs written to the archive (with `archive`). */
  archived?: number
  /** Runs left in the store that a sweep with `archive` could not archive whole, or that changed after archiving. */
  kept?: number
  /** Why it stopped short, if it did (the claim was lost, the store failed, the engine stopped). */
  error?: string
}
