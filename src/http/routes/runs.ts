import type { StartRunArgs, WaitFor } from '../../core/api-types.js'
import type { RunAttributes } from '../../core/attributes.js'
import { jsonResponse } from '../error-response.js'
import type { Route, RouteContext } from '../route-types.js'
import { wantsEventStream } from '../sse-request.js'
import { streamStart } from '../stream-start.js'
import { SUMMARY_PARAMETERS, summaryQueryOf } from '../summary-query.js'
import { terminalWaitOf } from '../terminal-wait.js'
import {
  expectObject,
  idempotencyKeyOf,
  optionalId,
  optionalString,
  queryFlag,
  requiredString,
} from '../validate.js'

const START_FIELDS = [
  'kind',
  'definitionName',
  'definitionVersion',
  'input',
  'runId',
  'threadId',
  'idempotencyKey',
  'wait',
  'timeoutMs',
  'priority',
  'startAt',
  'attributes',
]

async function startArgs(ctx: RouteContext): Promise<StartRunArgs> {
  const body = expectObject(await ctx.body(), START_FIELDS)
  const args: StartRunArgs = {
    kind: requiredString(body, 'kind'),
    definitionName: requiredString(body, 'definitionName'),
  }
  const version = optionalString(body, 'definitionVersion')
  if (version !== undefined) args.definitionVersion = version
  if (body.input !== undefined) args.input = body.input
  const runId = optionalId(body, 'runId')
  if (runId !== undefined) args.runId = runId
  const threadId = optionalId(body, 'threadId')
  if (threadId !== undefined) args.threadId = threadId
  const key = idempotencyKeyOf(ctx.request, optionalString(body, 'idempotencyKey'))
  if (key !== undefined) args.idempotencyKey = key
  // Checked by the engine (a positive integer) before it writes.
  if (body.timeoutMs !== undefined) args.timeoutMs = body.timeoutMs as number
  // Checked by the engine (finite numbers) before it writes.
  if (body.priority !== undefined) args.priority = body.priority as number
  if (body.startAt !== undefined) args.startAt = body.startAt as number
  // Checked against the definition's declarations by the engine before it writes.
  if (body.attributes !== undefined) args.attributes = body.attributes as RunAttributes
  // 'quick' or 'settled'; the engine refuses anything else (400) before it writes.
  const wait = optionalString(body, 'wait')
  if (wait !== undefined) args.wait = wait as WaitFor
  return args
}

export const runRoutes: Route[] = [
  {
    method: 'POST',
    path: '/runs',
    name: 'runs.start',
    access: 'write',
    async handle(ctx) {
      const args = await startArgs(ctx)
      if (wantsEventStream(ctx.request)) {
        return streamStart(ctx.engine, ctx.streams, ctx.sse, args, ctx.request.signal)
      }
      const result = await ctx.engine.startRun(args)
      return jsonResponse({ runId: result.runId, threadId: result.threadId, state: result.state })
    },
  },
  {
    method: 'GET',
    path: '/runs',
    name: 'runs.list',
    access: 'read',
    handle: async (ctx) => jsonResponse({ runIds: await ctx.engine.listRuns() }),
  },
  {
    method: 'GET',
    path: '/runs/summaries',
    name: 'runs.summaries',
    access: 'read',
    query: SUMMARY_PARAMETERS,
    handle: async (ctx) => {
      const types = (await ctx.engine.runtime).registry.attributeTypes
      const page = await ctx.engine.listRunSummaries(summaryQueryOf(ctx.url, types))
      return jsonResponse({ runs: page.runs, nextCursor: page.nextCursor })
    },
  },
  {
    method: 'GET',
    path: '/runs/:id',
    name: 'runs.get',
    access: 'read',
    query: ['wait', 'timeoutMs'],
    handle: async (ctx) => {
      const timeoutMs = terminalWaitOf(ctx.url)
      if (timeoutMs === undefined) {
        return jsonResponse({ runId: ctx.params.id, state: await ctx.engine.getRun(ctx.params.id) })
      }
      const { state } = await ctx.waits.wait(ctx.params.id, timeoutMs, ctx.request.signal)
      return jsonResponse({ runId: ctx.params.id, state })
    },
  },
  {
    // Deletes the run whole (docs/data-lifecycle.md); ?force=true deletes an unfinished one.
    method: 'DELETE',
    path: '/runs/:id',
    name: 'runs.delete',
    access: 'operations',
    query: ['force'],
    handle: async (ctx) => {
      const force = queryFlag(ctx.url, 'force')
      return jsonResponse({ deleted: await ctx.engine.deleteRun(ctx.params.id, { force }) })
    },
  },
  {
    method: 'POST',
    path: '/runs/:id/wake',
    name: 'runs.wake',
    access: 'write',
    handle: async (ctx) =>
      jsonResponse({ runId: ctx.params.id, state: await ctx.engine.wake(ctx.params.id) }),
  },
]
