// `skein migrate`: runs moved to another version of their definition (docs/deploys.md,
// "Migrating runs"), one run over `POST /runs/:id/migrate`, or every run of a definition over
// `POST /operations/runs/migrate`.
import type { Command } from 'commander'
import type { BulkResult, RunFilter } from '../core/bulk-types.js'
import type { RunStatus } from '../core/envelope.js'
import type { MigrationDifference } from '../core/kind.js'
import type { RunMigration } from '../core/migration-types.js'
import { clientAction } from './client-commands.js'
import { table } from './format.js'
import { CliError, type CliIo, describeError, parseCount, usageError } from './io.js'

interface MigrateCliOptions {
  to: string
  dryRun?: boolean
  definition?: string
  from?: string
  status?: string
  maxRuns?: string
}

/** One line per difference: where, what the run has, what the target has, why. */
export function formatDifferences(differences: readonly MigrationDifference[]): string {
  return differences
    .map(
      (d) =>
        `  ${d.threadId ? `${d.threadId} ` : ''}${d.path}: run ${JSON.stringify(d.current)}, target ${JSON.stringify(d.target)} (${d.reason})`,
    )
    .join('\n')
}

function formatMigration(m: RunMigration): string {
  if (m.fromVersion === m.toVersion)
    return `${m.runId} is on ${m.toVersion} already: nothing written`
  if (m.dryRun) return `${m.runId} would move from ${m.fromVersion} to ${m.toVersion} (dry run)`
  return `migrated ${m.runId} from ${m.fromVersion} to ${m.toVersion}`
}

function formatBulk(result: BulkResult, toVersion: string): string {
  const moved = result.dryRun ? 'would move' : 'migrated'
  const rows = [
    ['RUN', 'FROM', 'RESULT'],
    ...result.done.map((d) => [
      d.runId,
      d.fromVersion ?? '',
      d.fromVersion === toVersion ? 'on the target already' : moved,
    ]),
    ...result.refused.map((r) => [r.runId, '', `refused: ${r.code}`]),
  ]
  const refusals = result.refused
    .filter((r) => r.differences && r.differences.length > 0)
    .map((r) => `${r.runId}:\n${formatDifferences(r.differences ?? [])}`)
  const summary = `${result.done.length} ${moved}, ${result.refused.length} refused of ${result.matched} matched${result.truncated ? ' (more matched: run again)' : ''}`
  return [table(rows), ...refusals, summary].join('\n')
}

export function registerMigrateCommand(program: Command, io: CliIo): void {
  const action = clientAction(io)
  program
    .command('migrate')
    .description(
      'move a run, or every run of a definition, to another version when its progress fits it (needs an operations token)',
    )
    .argument('[runId]', 'the run to move (or give --definition)')
    .requiredOption('--to <version>', 'the version to move to')
    .option('--dry-run', 'check and report, write nothing')
    .option('--definition <name>', 'every run of this definition not yet finished')
    .option('--from <version>', 'with --definition: only runs on this version')
    .option('--status <list>', 'with --definition: only runs with these statuses, comma-separated')
    .option('--max-runs <n>', 'with --definition: at most this many runs (default 1000)')
    .action(
      action(async (ctx, runId: string | undefined, o: MigrateCliOptions) => {
        const dryRun = o.dryRun === true
        if ((runId === undefined) === (o.definition === undefined)) {
          throw usageError('give a run id, or --definition <name> (not both)')
        }
        if (runId !== undefined) {
          try {
            const { migration } = await ctx.client.migrateRun(runId, { toVersion: o.to, dryRun })
            ctx.print(migration, () => formatMigration(migration))
          } catch (error) {
            const details = (error as { details?: { differences?: MigrationDifference[] } }).details
            const lines = details?.differences?.length
              ? `\n${formatDifferences(details.differences)}`
              : ''
            throw new CliError(`${describeError(error, ctx.url)}${lines}`)
          }
          return
        }
        const filter: RunFilter = { definitionName: o.definition }
        if (o.from !== undefined) filter.definitionVersion = o.from
        if (o.status !== undefined) filter.status = o.status.split(',') as RunStatus[]
        const maxRuns = parseCount('--max-runs', o.maxRuns)
        const result = await ctx.client.migrateRuns(filter, {
          toVersion: o.to,
          dryRun,
          ...(maxRuns !== undefined ? { maxRuns } : {}),
        })
        ctx.print(result, () => formatBulk(result, o.to))
        if (result.refused.length > 0) {
          throw new CliError(`${result.refused.length} of ${result.matched} run(s) refused`)
        }
      }),
    )
}
