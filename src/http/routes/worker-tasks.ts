import { InvalidRequestError } from '../../core/errors.js'
import type { Json, JsonObject } from '../../core/json.js'
import type { WorkerTask } from '../../core/ports.js'
import { isClaimable } from '../../workers/worker-queue.js'
import { errorInfoOf, jsonResponse } from '../error-response.js'
import type { Route, RouteContext } from '../route-types.js'
import { expectObject, requiredString } from '../validate.js'
import { callbackInput } from './effects.js'

const MAX_WAIT_MS = 30_000

function claimOptions(body: JsonObject) {
  const { types, max, waitMs } = body
  if (
    types !== undefined &&
    (!Array.isArray(types) ||
      types.length > 100 ||
      types.some((t) => typeof t !== 'string' || t.length === 0 || t.length > 200))
  ) {
    throw new InvalidRequestError('body.types must be an array of at most 100 effect types')
  }
  const int = (value: Json | undefined, name: string, min: number, limit: number) => {
    if (value === undefined) return undefined
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > limit) {
      throw new InvalidRequestError(`body.${name} must be an integer from ${min} to ${limit}`)
    }
    return value
  }
  return {
    types: types as string[] | undefined,
    max: int(max, 'max', 1, 100),
    waitMs: int(waitMs, 'waitMs', 0, MAX_WAIT_MS),
  }
}

/**
 * A claimed task is recorded `started` before it is handed out: schedule-to-start ends when a
 * worker takes it, and start-to-close and heartbeat deadlines bound it from then on (the
 * lease). A worker that dies loses its attempt to those timeouts and the engine dispatches a
 * new one; there is no silent redelivery of the same attempt. Any host on the store hands out
 * any run's tasks (docs/workers.md, "Durable tasks").
 */
async function claim(ctx: RouteContext): Promise<Response> {
  const raw = ctx.request.body === null ? {} : await ctx.body()
  const options = claimOptions(expectObject(raw, ['types', 'max', 'waitMs']))
  const { runtime } = await ctx.engine.ready()
  const queue = runtime.worker
  const start = runtime.startClaimedTasks
  if (!isClaimable(queue) || !start) return jsonResponse({ tasks: [] })
  const tasks: WorkerTask[] = await queue.claim({
    ...options,
    signal: ctx.request.signal,
    start: (claimed) => start(claimed),
  })
  return jsonResponse({ tasks })
}

const MAX_CALLBACKS = 100

/**
 * Many callbacks in one request (docs/workers.md, "Batched callbacks"): each is the body of
 * `POST /runs/:id/effects/:effectId/callback` plus its `runId` and `effectId`, checked the same
 * way; all are applied (each run's in one queue), and each answers on its own: the run's status,
 * or the error that call alone would have answered. A malformed item refuses the whole request
 * (400, nothing applied).
 */
async function callbacks(ctx: RouteContext): Promise<Response> {
  const body = expectObject(await ctx.body(), ['callbacks'])
  const list = body.callbacks
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_CALLBACKS) {
    throw new InvalidRequestError(
      `body.callbacks must be an array of 1 to ${MAX_CALLBACKS} callbacks`,
    )
  }
  const inputs = list.map((item, i) => {
    const what = `body.callbacks[${i}]`
    const fields = expectObject(
      item,
      ['runId', 'effectId', 'attempt', 'kind', 'result', 'events', 'error', 'retryable'],
      what,
    )
    const runId = requiredString(fields, 'runId', what)
    return { runId, input: callbackInput(fields, requiredString(fields, 'effectId', what)) }
  })
  const settled = await Promise.allSettled(
    inputs.map(({ runId, input }) => ctx.engine.workerCallback(runId, input)),
  )
  const results = settled.map((outcome, i) => {
    const { runId, input } = inputs[i]
    if (outcome.status === 'fulfilled') {
      return { runId, effectId: input.effectId, status: outcome.value.status }
    }
    return { runId, effectId: input.effectId, error: errorInfoOf(outcome.reason) }
  })
  return jsonResponse({ results })
}

export const workerRoutes: Route[] = [
  {
    method: 'POST',
    path: '/workers/tasks/callbacks',
    name: 'workers.callbacks',
    access: 'worker',
    handle: callbacks,
  },
  {
    method: 'POST',
    path: '/workers/tasks/claim',
    name: 'workers.claim',
    access: 'worker',
    handle: claim,
  },
]
