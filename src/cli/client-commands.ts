// The HTTP client commands: thin wrappers over `skein/client`.
import type { Command } from 'commander'
import { createEngineClient, type EngineClient } from '../client/index.js'
import type { RunAttributes } from '../core/attributes.js'
import type { EventEnvelope, RunStatus } from '../core/envelope.js'
import type { Json } from '../core/json.js'
import type { RunSummary, SummaryQuery } from '../core/ports.js'
import type { ApprovalItem } from '../modules/approval/index.js'
import { decision } from '../modules/approval/index.js'
import {
  formatDefinitions,
  formatEvent,
  formatInspect,
  formatProjectors,
  formatQueues,
  formatReplay,
  formatState,
  formatSummaries,
  formatVersions,
  table,
} from './format.js'
import {
  CliError,
  type CliIo,
  describeError,
  parseCount,
  parseJsonOption,
  parseTime,
} from './io.js'

export const DEFAULT_URL = 'http://127.0.0.1:8787'
/** Runs fetched per request by `skein runs`. */
const RUNS_PAGE = 500

interface RunsOptions {
  status?: string
  definition?: string
  definitionVersion?: string
  prefix?: string
  createdFrom?: string
  createdBefore?: string
  updatedFrom?: string
  updatedBefore?: string
  oldestFirst?: boolean
  limit?: string
  attr: string[]
}

const collect = (value: string, previous: string[]) => [...previous, value]

/**
 * `--attr customer=c1`, `--attr 'amount>=100'`, `--attr 'amount<=200'` as the client's filters;
 * the server reads each value as the attribute's declared type.
 */
function attributeFilters(texts: readonly string[]): SummaryQuery['attributes'] {
  const out: Record<string, string | { min?: string; max?: string }> = {}
  for (const text of texts) {
    const match = /^([^<>=]+)(>=|<=|=)(.*)$/s.exec(text)
    if (!match)
      throw new CliError(`--attr must be name=value, name>=value or name<=value, got "${text}"`)
    const [, name, op, value] = match
    const range = out[name]
    if (op === '=') out[name] = value
    else {
      const bounds = typeof range === 'object' ? range : {}
      out[name] = { ...bounds, [op === '>=' ? 'min' : 'max']: value }
    }
  }
  return out as SummaryQuery['attributes']
}

interface GlobalOptions {
  url?: string
  token?: string
  json?: boolean
}

export interface Context {
  client: EngineClient
  url: string
  json: boolean
  out(text: string): void
  /** Prints `value` as JSON with --json, else the human rendering. */
  print(value: unknown, human: () => string): void
}

const TERMINAL = new Set(['runtime.run.completed', 'runtime.run.failed', 'runtime.run.cancelled'])

/** The `action` wrapper of client commands: a client for the command's --url and --token. */
export function clientAction(io: CliIo) {
  const context = (command: Command): Context => {
    const opts = command.optsWithGlobals<GlobalOptions>()
    const url = opts.url ?? io.env?.SKEIN_URL ?? DEFAULT_URL
    const token = opts.token ?? io.env?.SKEIN_TOKEN
    const client = createEngineClient({
      baseUrl: url,
      ...(io.fetch ? { fetch: io.fetch } : {}),
      ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
    })
    const json = opts.json === true
    const out = (text: string) => io.stdout.write(text.endsWith('\n') ? text : `${text}\n`)
    return {
      client,
      url,
      json,
      out,
      print: (value, human) => out(json ? JSON.stringify(value, null, 2) : human()),
    }
  }

  /** Runs an action with the client; any failure becomes one CliError line naming the url. */
  const action =
    <A extends unknown[]>(fn: (ctx: Context, ...args: A) => Promise<void>) =>
    async (...args: unknown[]) => {
      const command = args[args.length - 1] as Command
      const ctx = context(command)
      try {
        await fn(ctx, ...(args.slice(0, -1) as A))
      } catch (error) {
        // A CliError keeps its exit code (`skein wait` exits 124 on a timeout).
        if (error instanceof CliError) throw error
        throw new CliError(describeError(error, ctx.url))
      }
    }
  return action
}

export function registerClientCommands(program: Command, io: CliIo): void {
  const action = clientAction(io)

  program
    .command('start')
    .description('start a run of a registered definition')
    .argument('<kind>', 'definition kind, e.g. workflow')
    .argument('<name>', 'definition name')
    .option('--input <json>', 'the run input, as JSON')
    .option('--run-id <id>', 'a stable run id (retries of the same start return the same run)')
    .option('--key <key>', 'idempotency key: a retry returns the run this key created')
    .option('--definition-version <version>', 'definition version')
    .option(
      '--attributes <json>',
      "the run's attributes, as a JSON object (declared by its definition)",
    )
    .action(
      action(async (ctx, kind: string, name: string, o: Record<string, string | undefined>) => {
        const input = parseJsonOption('--input', o.input)
        const attributes = parseJsonOption('--attributes', o.attributes)
        const result = await ctx.client.startRun({
          kind,
          definitionName: name,
          ...(input === undefined ? {} : { input: input as Json }),
          ...(o.runId ? { runId: o.runId } : {}),
          ...(o.key ? { idempotencyKey: o.key } : {}),
          ...(o.definitionVersion ? { definitionVersion: o.definitionVersion } : {}),
          ...(attributes === undefined ? {} : { attributes: attributes as RunAttributes }),
        })
        ctx.print(result, () => `started ${result.runId}\n${formatState(result.state)}`)
      }),
    )

  program
    .command('runs')
    .description('list runs, newest first, a page at a time from the server')
    .option(
      '--status <list>',
      'only runs with one of these statuses, comma-separated (queued, running, completed, failed, cancelled)',
    )
    .option('--definition <name>', 'only runs of this definition name')
    .option('--definition-version <version>', 'only runs of this definition version')
    .option('--prefix <text>', 'only runs whose id starts with this text')
    .option(
      '--created-from <time>',
      'only runs created at or after this time (ISO 8601 or epoch ms)',
    )
    .option('--created-before <time>', 'only runs created before this time')
    .option('--updated-from <time>', 'only runs last updated at or after this time')
    .option('--updated-before <time>', 'only runs last updated before this time')
    .option(
      '--attr <filter>',
      'only runs whose attribute matches: name=value, name>=value, name<=value (repeatable)',
      collect,
      [],
    )
    .option('--oldest-first', 'the first created first (default: newest first)')
    .option('--limit <n>', 'print at most this many runs (default: every run)')
    .action(
      action(async (ctx, o: RunsOptions) => {
        const max = parseCount('--limit', o.limit)
        const runs: RunSummary[] = []
        const query: SummaryQuery = { limit: Math.min(max || RUNS_PAGE, RUNS_PAGE) }
        if (o.status !== undefined) query.status = o.status.split(',') as RunStatus[]
        if (o.definition !== undefined) query.definitionName = o.definition
        if (o.definitionVersion !== undefined) query.definitionVersion = o.definitionVersion
        if (o.prefix !== undefined) query.runIdPrefix = o.prefix
        if (o.createdFrom !== undefined)
          query.createdFrom = parseTime('--created-from', o.createdFrom)
        if (o.createdBefore !== undefined) {
          query.createdBefore = parseTime('--created-before', o.createdBefore)
        }
        if (o.updatedFrom !== undefined)
          query.updatedFrom = parseTime('--updated-from', o.updatedFrom)
        if (o.updatedBefore !== undefined) {
          query.updatedBefore = parseTime('--updated-before', o.updatedBefore)
        }
        if (o.oldestFirst) query.order = 'oldest'
        if (o.attr.length > 0) query.attributes = attributeFilters(o.attr)
        if (max !== 0) {
          for await (const run of ctx.client.allRunSummaries(query)) {
            runs.push(run)
            if (runs.length === max) break
          }
        }
        ctx.print({ runs }, () => formatSummaries(runs))
      }),
    )

  program
    .command('definitions')
    .description('list the definitions the server can start, with versions and inputs')
    .action(
      action(async (ctx) => {
        const { definitions } = await ctx.client.listDefinitions()
        ctx.print({ definitions }, () => formatDefinitions(definitions))
      }),
    )

  program
    .command('queues')
    .description("flow control's queues per key: limit, active, queued, oldest wait")
    .action(
      action(async (ctx) => {
        const { queues } = await ctx.client.queues()
        ctx.print({ queues }, () => formatQueues(queues))
      }),
    )

  program
    .command('versions')
    .description(
      'the drift report: runs not yet finished per definition version, whether this server registers it, which versions are safe to remove',
    )
    .action(
      action(async (ctx) => {
        const report = await ctx.client.versions()
        ctx.print(report, () => formatVersions(report))
      }),
    )

  program
    .command('get')
    .description("show a run's state")
    .argument('<runId>')
    .action(
      action(async (ctx, runId: string) => {
        const { state } = await ctx.client.getRun(runId)
        ctx.print({ runId, state }, () => formatState(state))
      }),
    )

  program
    .command('wait')
    .description(
      'wait for a run to finish and print its output (exit 1 if it failed or was cancelled)',
    )
    .argument('<runId>')
    .option('--timeout <ms>', 'give up after this many ms (exit 124; the run goes on)')
    .action(
      action(async (ctx, runId: string, o: { timeout?: string }) => {
        const timeoutMs = parseCount('--timeout', o.timeout)
        let output: Json | undefined
        try {
          output = await ctx.client.result(runId, timeoutMs === undefined ? {} : { timeoutMs })
        } catch (error) {
          const code = (error as { code?: unknown }).code
          if (code === 'RUN_FAILED' || code === 'RUN_CANCELLED') {
            throw new CliError(`${code}: ${(error as Error).message}`)
          }
          if (code === 'RESULT_TIMEOUT') throw new CliError((error as Error).message, 124)
          throw error
        }
        ctx.out(JSON.stringify(output ?? null, null, ctx.json ? 2 : undefined))
      }),
    )

  program
    .command('events')
    .description("print a run's events; --follow streams new ones until the run ends")
    .argument('<runId>')
    .option('--from <seq>', 'first seq to print (inclusive)')
    .option('--limit <n>', 'at most this many events (without --follow)')
    .option('--follow', 'keep streaming (SSE) until the run completes, fails or is cancelled')
    .option('--types <list>', 'only these event types, comma-separated; `prefix.*` for a family')
    .action(
      action(async (ctx, runId: string, o: EventsOptions) => {
        const fromSeq = parseCount('--from', o.from)
        const limit = parseCount('--limit', o.limit)
        const types = o.types?.split(',')
        const line = (e: EventEnvelope) => ctx.out(ctx.json ? JSON.stringify(e) : formatEvent(e))
        if (!o.follow) {
          const { events } = await ctx.client.getEvents(runId, { fromSeq, limit, types })
          if (ctx.json) ctx.out(JSON.stringify({ runId, events }, null, 2))
          else ctx.out(events.length ? events.map(formatEvent).join('\n') : 'no events')
          return
        }
        await follow(ctx, runId, { fromSeq: fromSeq ?? 1, types }, line, io.signal)
      }),
    )

  program
    .command('approvals')
    .description("list a run's approvals")
    .argument('<runId>')
    .action(
      action(async (ctx, runId: string) => {
        const { value } = await ctx.client.project<{ items: ApprovalItem[] }>(
          runId,
          'pendingApprovals',
        )
        ctx.print(value, () =>
          value.items.length
            ? table([
                ['APPROVAL', 'STATUS', 'TITLE'],
                ...value.items.map((i) => [i.approvalId, i.status, i.title]),
              ])
            : 'no approvals',
        )
      }),
    )

  for (const outcome of ['approve', 'reject'] as const) {
    program
      .command(outcome)
      .description(`${outcome} a pending approval (the only pending one when no id is given)`)
      .argument('<runId>')
      .argument('[approvalId]')
      .option('--comment <text>', 'recorded with the decision')
      .option(
        '--by <name>',
        'a display name recorded with the decision (the decider is your token)',
      )
      .option('--key <key>', 'idempotency key for the decision')
      .action(
        action(async (ctx, runId: string, approvalId: string | undefined, o: DecideOptions) => {
          const id = approvalId ?? (await onlyPending(ctx.client, runId))
          const event = decision(id, {
            outcome,
            ...(o.comment ? { payload: { comment: o.comment } } : {}),
            ...(o.by ? { name: o.by } : {}),
          })
          const { state } = await ctx.client.signal(runId, [event], {
            ...(o.key ? { idempotencyKey: o.key } : {}),
          })
          ctx.print({ runId, state }, () => `${outcome}d ${id}\n${formatState(state)}`)
        }),
      )
  }

  program
    .command('signal')
    .description('append an event to a run and wake it')
    .argument('<runId>')
    .argument('<type>', 'event type, e.g. order.shipped')
    .option('--payload <json>', 'event payload, as JSON')
    .option('--thread <threadId>', 'address one thread')
    .option('--key <key>', 'idempotency key: the same signal again is a no-op, another one a 409')
    .action(
      action(async (ctx, runId: string, type: string, o: Record<string, string | undefined>) => {
        const payload = parseJsonOption('--payload', o.payload)
        const event = {
          type,
          ...(payload === undefined ? {} : { payload: payload as Json }),
          ...(o.thread ? { threadId: o.thread } : {}),
        }
        const { state } = await ctx.client.signal(runId, [event], {
          ...(o.key ? { idempotencyKey: o.key } : {}),
        })
        ctx.print({ runId, state }, () => `signalled ${type}\n${formatState(state)}`)
      }),
    )

  program
    .command('replay')
    .description('the state before and after one seq (never executes effects)')
    .argument('<runId>')
    .argument('<seq>')
    .action(
      action(async (ctx, runId: string, seqText: string) => {
        const seq = parseCount('seq', seqText)!
        const { step } = await ctx.client.replayTo(runId, seq)
        ctx.print({ runId, step }, () => formatReplay(step, runId, seq))
      }),
    )

  program
    .command('wake')
    .description('process pending work of a run (no domain signal is appended)')
    .argument('<runId>')
    .action(
      action(async (ctx, runId: string) => {
        const { state } = await ctx.client.wake(runId)
        ctx.print({ runId, state }, () => `woke ${runId}\n${formatState(state)}`)
      }),
    )

  program
    .command('effects')
    .description('every durable effect attempt of a run')
    .argument('<runId>')
    .action(
      action(async (ctx, runId: string) => {
        const { effects } = await ctx.client.listEffects(runId)
        ctx.print({ runId, effects }, () =>
          effects.length === 0
            ? `run ${runId} has no effect attempts`
            : table([
                ['effect', 'type', 'attempt', 'status', 'error'],
                ...effects.map((e) => [
                  e.effectId,
                  e.type,
                  String(e.attempt),
                  e.status,
                  e.error ? `${e.error.code}: ${e.error.message}` : '',
                ]),
              ]),
        )
      }),
    )

  program
    .command('retry')
    .description(
      'operator retry of an ambiguous, timed-out or failed effect (needs an operations token)',
    )
    .argument('<runId>')
    .argument('<effectId>')
    .action(
      action(async (ctx, runId: string, effectId: string) => {
        const result = await ctx.client.retryEffect(runId, effectId)
        ctx.print(result, () => `retry scheduled for ${effectId}\n${formatState(result.state)}`)
      }),
    )

  program
    .command('requeue')
    .description(
      'operator: a worker attempt stuck dispatched or started is ended and a new attempt dispatched at once (needs an operations token)',
    )
    .argument('<runId>')
    .argument('<effectId>')
    .option('--fail', 'fail the attempt instead: the retry policy decides whether it runs again')
    .action(
      action(async (ctx, runId: string, effectId: string, flags: { fail?: boolean }) => {
        const result = flags.fail
          ? await ctx.client.failEffect(runId, effectId)
          : await ctx.client.requeueEffect(runId, effectId)
        const done = flags.fail ? 'attempt failed' : 'new attempt dispatched'
        ctx.print(result, () => `${done} for ${effectId}\n${formatState(result.state)}`)
      }),
    )

  program
    .command('delete')
    .description(
      'delete a finished run whole: log, snapshots, keys, tokens (needs an operations token)',
    )
    .argument('<runId>')
    .option('--force', 'delete a run that has not finished too (its work is abandoned)')
    .action(
      action(async (ctx, runId: string, opts: { force?: boolean }) => {
        const result = await ctx.client.deleteRun(runId, { force: opts.force === true })
        ctx.print(result, () => `deleted ${runId} (${result.deleted.tail} event(s))`)
      }),
    )

  program
    .command('rescan')
    .description(
      'rebuild every wake deadline from the log (after a restore; needs an operations token)',
    )
    .action(
      action(async (ctx) => {
        const result = await ctx.client.rescanDeadlines()
        ctx.print(result, () => `scheduled ${result.scheduled} run deadline(s)`)
      }),
    )

  program
    .command('projectors')
    .description("each projector's state, lag and last error (needs an operations token)")
    .action(
      action(async (ctx) => {
        const result = await ctx.client.projectors()
        ctx.print(result, () => formatProjectors(result.projectors))
      }),
    )

  program
    .command('inspect')
    .description("a run's threads, open waits, effects and deadlines")
    .argument('<runId>')
    .action(
      action(async (ctx, runId: string) => {
        const status = await ctx.client.inspectRun(runId)
        ctx.print(status, () => formatInspect(status))
      }),
    )
}

interface DecideOptions {
  comment?: string
  by?: string
  key?: string
}

async function onlyPending(client: EngineClient, runId: string): Promise<string> {
  const { value } = await client.project<{ items: ApprovalItem[] }>(runId, 'pendingApprovals')
  const pending = value.items.filter((i) => i.status === 'pending')
  if (pending.length === 1) return pending[0].approvalId
  if (pending.length === 0) throw new CliError(`run ${runId} has no pending approval`)
  throw new CliError(
    `run ${runId} has ${pending.length} pending approvals; name one: ${pending.map((i) => i.approvalId).join(', ')}`,
  )
}

interface EventsOptions {
  from?: string
  limit?: string
  follow?: boolean
  types?: string
}

/** Streams events until the run ends, a permanent error or the abort signal. */
function follow(
  ctx: Context,
  runId: string,
  { fromSeq, types }: { fromSeq: number; types: string[] | undefined },
  line: (e: EventEnvelope) => void,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return resolve()
    let done = false
    const finish = (error?: unknown) => {
      if (done) return
      done = true
      stop()
      signal?.removeEventListener('abort', onAbort)
      if (error) reject(error)
      else resolve()
    }
    const onAbort = () => finish()
    const stop = ctx.client.subscribeEvents(
      runId,
      (event) => {
        if (done) return
        line(event)
        if (TERMINAL.has(event.type)) finish()
      },
      {
        fromSeq,
        types,
        // The server ends a finished run's stream, also when its last event is before fromSeq.
        onEnd: () => finish(),
        onError: (error, info) => {
          if (!info.retrying) finish(error)
        },
      },
    )
    signal?.addEventListener('abort', onAbort)
  })
}
