import type { WaitFor } from '../../core/api-types.js'
import type { EventEnvelope, EventInput } from '../../core/envelope.js'
import type { SignalOptions } from '../../runtime/engine-types.js'
import { jsonResponse } from '../error-response.js'
import type { Route, RouteContext } from '../route-types.js'
import { liveFlag, wantsEventStream } from '../sse-request.js'
import { openEventStream } from '../sse-stream.js'
import { parseTypeFilter, type TypeFilter } from '../type-filter.js'
import {
  expectObject,
  idempotencyKeyOf,
  intQuery,
  optionalString,
  parseCursor,
} from '../validate.js'

/** Resume point: Last-Event-ID (exclusive) wins over fromSeq (inclusive). */
function streamCursor(ctx: RouteContext): number {
  const fromSeq = intQuery(ctx.url, 'fromSeq')
  const lastEventId = ctx.request.headers.get('last-event-id')
  if (lastEventId !== null && lastEventId !== '') {
    return parseCursor(lastEventId.trim(), 'Last-Event-ID header')
  }
  return Math.max(0, (fromSeq ?? 1) - 1)
}

/**
 * Events of the types asked for, from `fromSeq`, at most `limit` of them: the log is read in
 * the same byte-bounded pages as a live stream's catch-up, keeping only matches.
 */
async function matchingEvents(
  ctx: RouteContext,
  runId: string,
  matches: TypeFilter,
  fromSeq: number,
  limit = Number.POSITIVE_INFINITY,
): Promise<EventEnvelope[]> {
  const found: EventEnvelope[] = []
  let next = fromSeq
  while (found.length < limit) {
    const page = await ctx.engine.getEvents(runId, { fromSeq: next, limit: ctx.sse.pageLimit })
    for (const event of page) {
      if (found.length < limit && matches(event.type)) found.push(event)
      next = event.seq + 1
    }
    if (page.length < ctx.sse.pageLimit) break
  }
  return found
}

export const runEventRoutes: Route[] = [
  {
    method: 'GET',
    path: '/runs/:id/events',
    name: 'runs.events',
    access: 'read',
    query: ['fromSeq', 'limit', 'live', 'types'],
    async handle(ctx) {
      const runId = ctx.params.id
      const matches = parseTypeFilter(ctx.url)
      if (liveFlag(ctx.url) || wantsEventStream(ctx.request)) {
        return openEventStream({
          engine: ctx.engine,
          streams: ctx.streams,
          runId,
          afterSeq: streamCursor(ctx),
          signal: ctx.request.signal,
          sse: ctx.sse,
          matches,
        })
      }
      const fromSeq = intQuery(ctx.url, 'fromSeq')
      const limit = intQuery(ctx.url, 'limit')
      if (matches) {
        const events = await matchingEvents(ctx, runId, matches, fromSeq ?? 1, limit)
        return jsonResponse({ runId, events })
      }
      const options: { fromSeq?: number; limit?: number } = {}
      if (fromSeq !== undefined) options.fromSeq = fromSeq
      if (limit !== undefined) options.limit = limit
      return jsonResponse({ runId, events: await ctx.engine.getEvents(runId, options) })
    },
  },
  {
    method: 'POST',
    path: '/runs/:id/events',
    name: 'runs.signal',
    access: 'write',
    async handle(ctx) {
      const runId = ctx.params.id
      const body = expectObject(await ctx.body(), ['events', 'idempotencyKey', 'wait'])
      // The events go to the engine as they came: it validates every signal, from here or from
      // embed code, by one rule with one set of limits (docs/http.md, "Signals").
      const events = body.events as unknown as EventInput[]
      const key = idempotencyKeyOf(ctx.request, optionalString(body, 'idempotencyKey'))
      // The caller's identity is the authorize hook's, never the body's (inputs such as
      // `approval.decided` record it as the decider).
      const options: SignalOptions = {}
      if (key !== undefined) options.idempotencyKey = key
      if (ctx.identity !== undefined) options.identity = ctx.identity
      // 'quick' or 'settled'; the engine refuses anything else (400) before it writes.
      const wait = optionalString(body, 'wait')
      if (wait !== undefined) options.wait = wait as WaitFor
      const state = await ctx.engine.signal(runId, events, options)
      return jsonResponse({ runId, state })
    },
  },
]
