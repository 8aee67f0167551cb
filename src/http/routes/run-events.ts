import type { EventInput } from '../../core/envelope.js'
import { InvalidRequestError } from '../../core/errors.js'
import type { Json } from '../../core/json.js'
import type { SignalOptions, WaitFor } from '../../runtime/engine-types.js'
import { jsonResponse } from '../error-response.js'
import type { Route, RouteContext } from '../route-types.js'
import { liveFlag, wantsEventStream } from '../sse-request.js'
import { openEventStream } from '../sse-stream.js'
import {
  checkEventBytes,
  checkId,
  expectObject,
  idempotencyKeyOf,
  intQuery,
  optionalId,
  optionalString,
  parseCursor,
  requiredString,
} from '../validate.js'

/** Events per POST: a batch is one append, so it is bounded like one wake's output. */
const MAX_EVENTS_PER_REQUEST = 1000
const MAX_TYPE_LENGTH = 256

function eventInputs(value: Json | undefined, maxEventBytes: number): EventInput[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_EVENTS_PER_REQUEST) {
    throw new InvalidRequestError(
      `body.events must be an array of 1 to ${MAX_EVENTS_PER_REQUEST} events`,
    )
  }
  return value.map((item, i) => {
    const what = `body.events[${i}]`
    const event = expectObject(item, ['type', 'payload', 'threadId'], what)
    const type = requiredString(event, 'type', what)
    if (type.length > MAX_TYPE_LENGTH) {
      throw new InvalidRequestError(`${what}.type is longer than ${MAX_TYPE_LENGTH} characters`)
    }
    const input: EventInput = { type }
    if (event.payload !== undefined) {
      checkEventBytes(event.payload, maxEventBytes, `${what}.payload`)
      input.payload = event.payload
    }
    const threadId = optionalId(event, 'threadId', what)
    if (threadId !== undefined) input.threadId = threadId
    return input
  })
}

/** Resume point: Last-Event-ID (exclusive) wins over fromSeq (inclusive). */
function streamCursor(ctx: RouteContext): number {
  const fromSeq = intQuery(ctx.url, 'fromSeq')
  const lastEventId = ctx.request.headers.get('last-event-id')
  if (lastEventId !== null && lastEventId !== '') {
    return parseCursor(lastEventId.trim(), 'Last-Event-ID header')
  }
  return Math.max(0, (fromSeq ?? 1) - 1)
}

export const runEventRoutes: Route[] = [
  {
    method: 'GET',
    path: '/runs/:id/events',
    name: 'runs.events',
    access: 'read',
    async handle(ctx) {
      const runId = ctx.params.id
      if (liveFlag(ctx.url) || wantsEventStream(ctx.request)) {
        const sse = ctx.options.sse ?? {}
        return openEventStream({
          engine: ctx.engine,
          streams: ctx.streams,
          runId,
          afterSeq: streamCursor(ctx),
          signal: ctx.request.signal,
          keepaliveMs: sse.keepaliveMs,
          maxBufferedEvents: sse.maxBufferedEvents,
          pageSize: sse.pageSize,
          timers: sse.timers,
        })
      }
      const fromSeq = intQuery(ctx.url, 'fromSeq')
      const limit = intQuery(ctx.url, 'limit')
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
      const events = eventInputs(body.events, ctx.options.maxEventBytes)
      const key = idempotencyKeyOf(ctx.request, optionalId(body, 'idempotencyKey'))
      const options: SignalOptions = {}
      if (key !== undefined) options.idempotencyKey = checkId(key, 'idempotencyKey')
      // 'quick' or 'settled'; the engine refuses anything else (400) before it writes.
      const wait = optionalString(body, 'wait')
      if (wait !== undefined) options.wait = wait as WaitFor
      const state = await ctx.engine.signal(runId, events, options)
      return jsonResponse({ runId, state })
    },
  },
]
