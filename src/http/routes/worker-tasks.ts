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
 * any run's tasks (docs/workers.md, "Durable tasks"). `callbacks` (optional, as in
 * `/workers/tasks/callbacks`) are applied first and answered in `results`: a worker reports what
 * it finished in the request that asks for more (docs/workers.md, "Outcomes ride the claim").
 */
async function claim(ctx: RouteContext): Promise<Response> {
  const raw = ctx.request.body === null ? {} : await ctx.body()
  const body = expectObject(raw, ['types', 'max', 'waitMs', 'callbacks'])
  const options = claimOptions(body)
  const carried = body.callbacks === undefined ? null : callbackInputs(body.callbacks)
  const results = carried ? await applyCallbacks(ctx, carried) : undefined
  const { runtime } = await ctx.engine.ready()
  const queue = runtime.worker
  const start = runtime.startClaimedTasks
  if (!isClaimable(queue) || !start)
    return jsonResponse(results ? { tasks: [], results } : { tasks: [] })
  const tasks: WorkerTask[] = await queue.claim({
    ...options,
    signal: ctx.request.signal,
    start: (claimed) => start(claimed),
  })
  return jsonResponse(results ? { tasks, results } : { tasks })
}

const MAX_CALLBACKS = 100

type CallbackItem = { runId: string; input: ReturnType<typeof callbackInput> }

/** Each item is a callback route's body plus `runId` and `effectId`; one malformed item is a 400. */
function callbackInputs(list: Json): CallbackItem[] {
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_CALLBACKS) {
    throw new InvalidRequestError(
      `body.callbacks must be an array of 1 to ${MAX_CALLBACKS} callbacks`,
    )
  }
  return list.map((item, i) => {
    const what = `body.callbacks[${i}]`
    const fields = expectObject(
      item,
      ['runId', 'effectId', 'attempt', 'kind', 'result', 'events', 'error', 'retryable'],
      what,
    )
    const runId = requiredString(fields, 'runId', what)
    return { runId, input: callbackInput(fields, requiredString(fields, 'effectId', what)) }
  })
}

/** Applies every item (each run's in its queue); each answers the run's status or its error. */
async function applyCallbacks(ctx: RouteContext, inputs: CallbackItem[]) {
  const settled = await Promise.allSettled(
    inputs.map(({ runId, input }) => ctx.engine.workerCallback(runId, input)),
  )
  return settled.map((outcome, i) => {
    const { runId, input } = inputs[i]
    if (outcome.status === 'fulfilled') {
      return { runId, effectId: input.effectId, status: outcome.value.status }
    }
    return { runId, effectId: input.effectId, error: errorInfoOf(outcome.reason) }
  })
}

/**
 * Many callbacks in one request (docs/http.md, "POST /workers/tasks/callbacks"): each is the body of
 * `POST /runs/:id/effects/:effectId/callback` plus its `runId` and `effectId`, checked the same
 * way; all are applied (each run's in one queue), and each answers on its own: the run's status,
 * or the error that call alone would have answered. A malformed item refuses the whole request
 * (400, nothing applied).
 */
async function callbacks(ctx: RouteContext): Promise<Response> {
  const body = expectObject(await ctx.body(), ['callbacks'])
  return jsonResponse({ results: await applyCallbacks(ctx, callbackInputs(body.callbacks)) })
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
