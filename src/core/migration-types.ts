import type { BulkOptions } from './bulk-types.js'

/** What `migrateRun` takes (docs/deploys.md, "Migrating runs"). */
export interface MigrateOptions {
  /** The version to move to, of the run's own kind and definition name. */
  toVersion: string
  /** Check the run against the target and report; write nothing. */
  dryRun?: boolean
}

/** What `migrateRuns` takes: the target and the bulk options (docs/operating-runs.md). */
export interface MigrateManyOptions extends BulkOptions {
  toVersion: string
}

/** One run's migration, done, checked (`dryRun`) or not needed (already on `toVersion`). */
export interface RunMigration {
  runId: string
  kind: string
  definitionName: string
  fromVersion: string
  toVersion: string
  /** The threads that move: the run's threads on `fromVersion` not yet finished. */
  threadIds: string[]
  dryRun: boolean
  /** True when `runtime.run.migrated` was recorded: not for a dry run, nor a run already there. */
  migrated: boolean
}
