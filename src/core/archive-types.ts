import type { EventEnvelope, RunStatus } from './envelope.js'
import type { RecordedKey, Snapshot } from './ports.js'

/**
 * The format of an archived run; a reader refuses a newer one. 2: the run's recorded append
 * keys (`keys`) come with it; 1 (archives written before) carries none, and restores without.
 */
export const ARCHIVE_FORMAT = 2

/**
 * One run as an archive holds it (docs/data-lifecycle.md, "Archives"): every event the store
 * had, in seq order, `head` through `tail`. A log trimmed behind a snapshot (`head > 1`) carries
 * that snapshot too, so nothing the store held is lost.
 */
export interface ArchivedRun {
  format: number
  runId: string
  /** The first seq held (1 unless the log was trimmed). */
  head: number
  tail: number
  status: RunStatus | null
  kind: string | null
  definitionName: string | null
  /** When it was archived (engine clock ms). */
  archivedAt: number
  events: EventEnvelope[]
  /** The snapshot covering `head - 1`, for a trimmed log; null otherwise. */
  snapshot: Snapshot | null
  /**
   * The idempotency keys the store recorded for the run's appends (format 2), written back on
   * restore; absent from format 1 and from sinks that do not carry them.
   */
  keys?: RecordedKey[]
}

/**
 * Where the retention sweep puts runs before deleting them (`retention.archive`). `write`
 * resolves only once every run given is durable in the archive: the sweep deletes a run only
 * after that, and only while its tail is still the archived one. A run written again (a sweep
 * resumed after a crash between archive and delete) must not be stored twice.
 */
export interface ArchiveSink {
  /** Names the sink in logs and `GET /operations/retention`. */
  readonly name: string
  /**
   * True when the sink stores a run with no event (a log trimmed to nothing: its snapshot and
   * head alone). A sink without it is never handed one: the sweep keeps such runs.
   */
  readonly emptyLogs?: boolean
  write(runs: readonly ArchivedRun[]): Promise<void>
  close?(): Promise<void>
}

/** What `restoreRun` answers. */
export interface RestoredRun {
  runId: string
  tail: number
  status: RunStatus
  /** False when the store already held this very run (same events): nothing was written. */
  restored: boolean
}
