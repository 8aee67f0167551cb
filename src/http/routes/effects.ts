import { InvalidRequestError } from '../../core/errors.js'
import type { Json, JsonObject } from '../../core/json.js'
import type { WorkerCallbackInput } from '../../core/ports.js'
import { jsonResponse } from '../error-response.js'
import type { Route } from '../route-types.js'
import { expectObject, requiredString } from '../validate.js'

const CALLBACK_KINDS = new Set(['started', 'heartbeat', 'complete', 'fail', 'cancelled'])

/** A worker callback's body, checked (also each item of `POST /workers/tasks/callbacks`). */
export function callbackInput(body: JsonObject, effectId: string) {
  const { attempt, kind } = body
  if (typeof attempt !== 'number' || !Number.isSafeInteger(attempt) || attempt < 0) {
    throw new InvalidRequestError('body.attempt must be a non-negative integer')
  }
  if (typeof kind !== 'string' || !CALLBACK_KINDS.has(kind)) {
    throw new InvalidRequestError(`body.kind must be one of ${[...CALLBACK_KINDS].join(', ')}`)
  }
  const input: WorkerCallbackInput = {
    effectId,
    attempt,
    kind: kind as WorkerCallbackInput['kind'],
  }
  // The result's and the events' JSON and size are the engine's to check (one rule for all).
  if (body.result !== undefined) input.result = body.result
  if (body.events !== undefined) input.events = callbackEvents(body.events)
  if (body.error !== undefined) input.error = callbackError(body.error)
  if (body.retryable !== undefined) {
    if (typeof body.retryable !== 'boolean') {
      throw new InvalidRequestError('body.retryable must be a boolean')
    }
    input.retryable = body.retryable
  }
  return input
}

function callbackEvents(value: Json) {
  if (!Array.isArray(value) || value.length > 1000) {
    throw new InvalidRequestError('body.events must be an array of at most 1000 events')
  }
  return value.map((item, i) => {
    const what = `body.events[${i}]`
    const event = expectObject(item, ['type', 'payload'], what)
    const out: { type: string; payload?: Json } = { type: requiredString(event, 'type', what) }
    if (event.payload !== undefined) out.payload = event.payload
    return out
  })
}

function callbackError(value: Json): WorkerCallbackInput['error'] {
  if (typeof value === 'string') return value
  const error = expectObject(value, ['code', 'message', 'details'], 'body.error')
  const out: { code?: string; message: string; details?: Json } = {
    message: requiredString(error, 'message', 'body.error'),
  }
  if (error.code !== undefined) out.code = requiredString(error, 'code', 'body.error')
  if (error.details !== undefined) out.details = error.details
  return out
}

export const effectRoutes: Route[] = [
  {
    method: 'POST',
    path: '/runs/:id/effects/:effectId/retry',
    name: 'effects.retry',
    access: 'operations',
    async handle(ctx) {
      const { id, effectId } = ctx.params
      const caller = ctx.identity === undefined ? {} : { identity: ctx.identity }
      const state = await ctx.engine.retryEffect(id, effectId, caller)
      return jsonResponse({ runId: id, effectId, state })
    },
  },
  ...(['requeue', 'fail'] as const).map(
    (action): Route => ({
      method: 'POST',
      path: `/runs/:id/effects/:effectId/${action}`,
      name: `effects.${action}`,
      access: 'operations',
      async handle(ctx) {
        const { id, effectId } = ctx.params
        const caller = ctx.identity === undefined ? {} : { identity: ctx.identity }
        const state =
          action === 'requeue'
            ? await ctx.engine.requeueEffect(id, effectId, caller)
            : await ctx.engine.failEffect(id, effectId, caller)
        return jsonResponse({ runId: id, effectId, state })
      },
    }),
  ),
  {
    method: 'POST',
    path: '/runs/:id/effects/:effectId/callback',
    name: 'effects.callback',
    access: 'worker',
    async handle(ctx) {
      const { id, effectId } = ctx.params
      const body = expectObject(await ctx.body(), [
        'attempt',
        'kind',
        'result',
        'events',
        'error',
        'retryable',
      ])
      const input = callbackInput(body, effectId)
      return jsonResponse({ runId: id, state: await ctx.engine.workerCallback(id, input) })
    },
  },
]
