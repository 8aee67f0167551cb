// `skein schedules …`: the schedule routes over `skein/client` (docs/cli.md).
import type { Command } from 'commander'
import type { JsonObject } from '../core/json.js'
import type { ScheduleInfo } from '../core/schedule-types.js'
import { clientAction } from './client-commands.js'
import { table } from './format.js'
import { CliError, type CliIo, parseJsonOption, parseTime } from './io.js'

const when = (at: number | null) => (at === null ? '-' : new Date(at).toISOString())

function formatSchedules(schedules: ScheduleInfo[]): string {
  if (schedules.length === 0) return 'no schedules'
  return table([
    ['NAME', 'WHEN', 'STATE', 'NEXT FIRE', 'LAST RUN', 'STARTED', 'SKIPPED', 'MISSED'],
    ...schedules.map((s) => [
      s.name,
      s.spec.cron !== null ? `${s.spec.cron} ${s.spec.timezone}` : `every ${s.spec.every} ms`,
      s.paused ? 'paused' : 'active',
      when(s.nextFireAt),
      s.state.lastRunId ?? '-',
      String(s.state.started),
      String(s.state.skipped),
      String(s.state.missed),
    ]),
  ])
}

function formatSchedule(s: ScheduleInfo): string {
  const lines = [
    `${s.name}${s.paused ? ' (paused)' : ''}`,
    `  ${s.spec.cron !== null ? `cron ${s.spec.cron} in ${s.spec.timezone}` : `every ${s.spec.every} ms`}`,
    `  starts ${s.spec.start.kind} ${s.spec.start.definitionName}; overlap ${s.spec.overlap}, catchUp ${s.spec.catchUp}`,
    `  next: ${s.upcoming.map((at) => new Date(at).toISOString()).join(', ') || '-'}`,
    `  started ${s.state.started}, skipped ${s.state.skipped}, missed ${s.state.missed}`,
  ]
  if (s.state.lastError)
    lines.push(`  last error: ${s.state.lastError.code}: ${s.state.lastError.message}`)
  for (const run of s.state.recent) {
    lines.push(`  ${run.runId}  ${run.reason}  started ${new Date(run.startedAt).toISOString()}`)
  }
  return lines.join('\n')
}

const objectOption = (name: string, text: string): JsonObject => {
  const value = parseJsonOption(name, text)
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CliError(`${name} must be a JSON object`)
  }
  return value as JsonObject
}

export function registerScheduleCommands(program: Command, io: CliIo): void {
  const action = clientAction(io)
  const schedules = program
    .command('schedules')
    .description('list, create, change, pause, resume, trigger and backfill schedules')
  schedules
    .command('list', { isDefault: true })
    .description('every schedule, its next fire time and counters')
    .action(
      action(async (ctx) => {
        const { schedules: all } = await ctx.client.schedules.list()
        ctx.print(all, () => formatSchedules(all))
      }),
    )
  schedules
    .command('get')
    .description('one schedule: its next fire times and last runs')
    .argument('<name>')
    .action(
      action(async (ctx, name: string) => {
        const { schedule } = await ctx.client.schedules.get(name)
        ctx.print(schedule, () => formatSchedule(schedule))
      }),
    )
  schedules
    .command('create')
    .description('create a schedule from its JSON options (operations access)')
    .argument(
      '<json>',
      '{ "name", "cron" | "every", "timezone"?, "start": { "kind", "definitionName", "input"? }, … }',
    )
    .action(
      action(async (ctx, json: string) => {
        const { schedule } = await ctx.client.schedules.create(objectOption('schedule', json))
        ctx.print(schedule, () => formatSchedule(schedule))
      }),
    )
  schedules
    .command('update')
    .description('change fields of a schedule (operations access)')
    .argument('<name>')
    .argument('<json>', 'the fields to change, e.g. { "cron": "0 10 * * 1-5" }')
    .action(
      action(async (ctx, name: string, json: string) => {
        const { schedule } = await ctx.client.schedules.update(name, objectOption('patch', json))
        ctx.print(schedule, () => formatSchedule(schedule))
      }),
    )
  for (const verb of ['pause', 'resume'] as const) {
    schedules
      .command(verb)
      .description(
        verb === 'pause'
          ? 'stop ticking (ticks while paused are skipped)'
          : 'tick again from the next tick',
      )
      .argument('<name>')
      .action(
        action(async (ctx, name: string) => {
          const { schedule } = await ctx.client.schedules[verb](name)
          ctx.print(schedule, () => formatSchedule(schedule))
        }),
      )
  }
  schedules
    .command('delete')
    .description('delete a schedule (its runs stay)')
    .argument('<name>')
    .action(
      action(async (ctx, name: string) => {
        const result = await ctx.client.schedules.delete(name)
        ctx.print(result, () => `deleted ${name}`)
      }),
    )
  schedules
    .command('trigger')
    .description('start a run of the schedule now')
    .argument('<name>')
    .action(
      action(async (ctx, name: string) => {
        const result = await ctx.client.schedules.trigger(name)
        ctx.print(
          result,
          () => `started ${result.runId} (${result.state?.status ?? 'not started'})`,
        )
      }),
    )
  schedules
    .command('backfill')
    .description('start the runs of every tick in a range not started yet (at most 1,000)')
    .argument('<name>')
    .requiredOption('--from <time>', 'ISO 8601 time or epoch ms')
    .requiredOption('--to <time>', 'ISO 8601 time or epoch ms')
    .action(
      action(async (ctx, name: string, opts: { from: string; to: string }) => {
        const result = await ctx.client.schedules.backfill(name, {
          from: parseTime('--from', opts.from),
          to: parseTime('--to', opts.to),
        })
        ctx.print(
          result,
          () =>
            `${result.runIds.length} tick(s): ${result.runIds.length - result.existing} started, ${result.existing} existed`,
        )
      }),
    )
}
