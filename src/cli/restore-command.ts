// `skein restore`: archived runs back into a server's store, over `POST /operations/restore`.
import type { Command } from 'commander'
import type { ArchivedRun } from '../core/archive-types.js'
import { readArchive } from '../runtime/jsonl-archive.js'
import { clientAction } from './client-commands.js'
import { CliError, type CliIo, describeError, usageError } from './io.js'

interface RestoreOptions {
  stream?: string
  nats?: string
  run?: string
}

/** The runs to restore: from a file or directory of `.jsonl.gz` files, or a JetStream stream. */
async function* archivedRuns(archive: string | undefined, o: RestoreOptions) {
  if (o.stream) {
    // Loaded only here: the NATS client is an optional dependency.
    const { readNatsArchive } = await import('../nats/index.js')
    yield* await readNatsArchive({ servers: o.nats ?? '127.0.0.1:4222', stream: o.stream }, o.run)
    return
  }
  if (!archive) throw usageError('give an archive (a .jsonl.gz file or a directory) or --stream')
  for await (const run of readArchive(archive)) if (!o.run || run.runId === o.run) yield run
}

export function registerRestoreCommand(program: Command, io: CliIo): void {
  const action = clientAction(io)
  program
    .command('restore')
    .description(
      "bring archived runs back into the server's store, with the same events (needs an operations token)",
    )
    .argument('[archive]', 'a .jsonl.gz file, or a directory searched for them (jsonlArchive)')
    .option('--stream <name>', 'read the runs from this JetStream stream instead (natsArchive)')
    .option('--nats <servers>', 'the NATS server for --stream', '127.0.0.1:4222')
    .option('--run <runId>', 'only this run')
    .action(
      action(async (ctx, archive: string | undefined, o: RestoreOptions) => {
        const results: Array<{ runId: string; restored?: boolean; tail?: number; error?: string }> =
          []
        for await (const run of archivedRuns(archive, o) as AsyncGenerator<ArchivedRun>) {
          try {
            const { restored } = await ctx.client.restoreRun(run)
            results.push(restored)
            if (!ctx.json) {
              ctx.out(
                restored.restored
                  ? `restored ${run.runId} (${restored.tail} event(s), ${restored.status})`
                  : `${run.runId} is in the store already: nothing written`,
              )
            }
          } catch (error) {
            const message = describeError(error, ctx.url)
            results.push({ runId: run.runId, error: message })
            if (!ctx.json) ctx.out(`refused ${run.runId}: ${message}`)
          }
        }
        if (ctx.json) ctx.out(JSON.stringify({ results }, null, 2))
        const refused = results.filter((r) => r.error !== undefined).length
        if (results.length === 0)
          throw new CliError(`no archived run found${o.run ? ` for ${o.run}` : ''}`)
        if (refused > 0) throw new CliError(`${refused} of ${results.length} run(s) refused`)
      }),
    )
}
