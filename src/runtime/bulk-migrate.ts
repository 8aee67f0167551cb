import type { BulkResult, RunFilter } from '../core/bulk-types.js'
import { InvalidRequestError } from '../core/errors.js'
import type { MigrateManyOptions, MigrateOptions, RunMigration } from '../core/migration-types.js'
import type { SummaryPage, SummaryQuery } from '../core/ports.js'
import { inBatches, matchRuns } from './bulk.js'
import type { CallerContext } from './engine-types.js'
import { checkMigrateOptions } from './migrate-run.js'

/** What a bulk migration needs of the engine. */
export interface MigratingEngine {
  listRunSummaries(query: SummaryQuery): Promise<SummaryPage>
  migrateRun(runId: string, options: MigrateOptions, caller?: CallerContext): Promise<RunMigration>
}

/** The statuses of runs not yet finished: what a migration's filter means without a status. */
const UNFINISHED: SummaryQuery['status'] = ['running', 'queued']

/**
 * Moves every run matching `filter` to `toVersion` (docs/operating-runs.md, "Bulk actions";
 * docs/deploys.md, "Migrating runs"): run by run through `migrateRun`, so each is checked on
 * its own and an unsafe one is refused with its differences while the others move. The filter
 * must name the definition; without a status it matches the runs not yet finished. A dry run
 * checks every run and lists what would move and what would be refused.
 */
export async function migrateMany(
  engine: MigratingEngine,
  filter: RunFilter,
  options: MigrateManyOptions,
  caller: CallerContext = {},
): Promise<BulkResult> {
  const { toVersion, dryRun } = checkMigrateOptions(options)
  if (typeof filter?.definitionName !== 'string') {
    throw new InvalidRequestError(
      'a migration filter must name the definition (definitionName): a version belongs to one definition',
    )
  }
  const scoped: RunFilter = { ...filter, status: filter.status ?? UNFINISHED }
  const { result, runIds, batchSize } = await matchRuns(engine, 'migrate', scoped, options)
  await inBatches(result, runIds, batchSize, options, async (runId) => {
    const migration = await engine.migrateRun(runId, { toVersion, dryRun }, caller)
    return { runId, fromVersion: migration.fromVersion }
  })
  return result
}
