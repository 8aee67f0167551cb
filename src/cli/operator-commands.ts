// `skein cancel` and `skein fork`: operator actions that change what runs (operations access).
import type { Command } from 'commander'
import type { BulkResult, RunFilter } from '../core/bulk-types.js'
import type { ForkOptions } from '../core/fork-types.js'
import type { Json } from '../core/json.js'
import { clientAction } from './client-commands.js'
import { formatState } from './format.js'
import { type CliIo, parseCount, parseJsonOption, usageError } from './io.js'

interface CancelOptions {
  thread?: string
  filter?: string
  dryRun?: boolean
  maxRuns?: string
}

interface ForkFlags {
  atSeq?: string
  atNode?: string
  input?: string
  runId?: string
}

/** One line per bulk result: the counts, then each refusal with its code. */
function formatBulk(result: BulkResult): string {
  const head = result.dryRun
    ? `${result.matched} run(s) match: nothing done (dry run)`
    : `cancelled ${result.done.length} of ${result.matched} matching run(s), ${result.refused.length} refused`
  const more = result.truncated ? '\nmore runs matched than --max-runs: run it again' : ''
  const refused = result.refused.map((r) => `\n  ${r.runId}: ${r.code}: ${r.message}`).join('')
  return head + refused + more
}

export function registerOperatorCommands(program: Command, io: CliIo): void {
  const action = clientAction(io)

  program
    .command('cancel')
    .description(
      'cancel a run (or one thread), or every run a filter matches (needs an operations token, on a host that serves the cancel routes)',
    )
    .argument('[runId]')
    .option('--thread <threadId>', 'cancel this thread of the run (and its children) only')
    .option('--filter <json>', 'cancel every run matching this filter (`skein runs` filters)')
    .option('--dry-run', 'with --filter: count the matching runs, cancel none')
    .option('--max-runs <n>', 'with --filter: at most this many runs, oldest first')
    .action(
      action(async (ctx, runId: string | undefined, o: CancelOptions) => {
        if ((runId === undefined) === (o.filter === undefined)) {
          throw usageError('give a run id, or --filter (not both)')
        }
        if (o.filter !== undefined) {
          if (o.thread !== undefined) throw usageError('--thread needs a run id, not --filter')
          const filter = parseJsonOption('--filter', o.filter) as RunFilter
          const bulk: { dryRun?: boolean; maxRuns?: number } = {}
          if (o.dryRun) bulk.dryRun = true
          if (o.maxRuns !== undefined) bulk.maxRuns = parseCount('--max-runs', o.maxRuns)
          const result = await ctx.client.cancelMany(filter, bulk)
          ctx.print(result, () => formatBulk(result))
          return
        }
        if (o.dryRun || o.maxRuns !== undefined) {
          throw usageError('--dry-run and --max-runs go with --filter')
        }
        const id = runId as string
        const result = await ctx.client.cancel(id, o.thread ? { threadId: o.thread } : {})
        ctx.print(result, () => `cancelled ${o.thread ?? id}\n${formatState(result.state)}`)
      }),
    )

  program
    .command('fork')
    .description(
      "a new run from a run's log before a seq or a workflow node, going on with the code deployed now; the run itself is untouched (needs an operations token)",
    )
    .argument('<runId>')
    .option('--at-seq <seq>', 'copy the events before this seq; the new run goes on from there')
    .option('--at-node <nodeId>', 'cut before this node: it and what follows it run again')
    .option('--input <json>', "replace the run's input")
    .option('--run-id <runId>', 'the new run id (default: a new one)')
    .action(
      action(async (ctx, runId: string, o: ForkFlags) => {
        if ((o.atSeq === undefined) === (o.atNode === undefined)) {
          throw usageError('give one of --at-seq and --at-node')
        }
        const options: ForkOptions & { input?: Json } = {}
        if (o.atSeq !== undefined) options.atSeq = parseCount('--at-seq', o.atSeq)
        if (o.atNode !== undefined) options.atNode = o.atNode
        if (o.input !== undefined) options.input = parseJsonOption('--input', o.input) as Json
        if (o.runId !== undefined) options.runId = o.runId
        const forked = await ctx.client.fork(runId, options)
        const { atSeq } = forked.forkedFrom
        ctx.print(
          forked,
          () =>
            `forked ${runId} at seq ${atSeq} into ${forked.runId}\n${formatState(forked.state)}`,
        )
      }),
    )
}
