import { InvalidRequestError } from '../../core/errors.js'
import type { Json, JsonObject } from '../../core/json.js'
import type { WorkerTask } from '../../core/ports.js'
import { isClaimable } from '../../workers/worker-queue.js'
import { jsonResponse } from '../error-response.js'
import type { Route, RouteContext } from '../route-types.js'
import { expectObject } from '../validate.js'

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

export const workerRoutes: Route[] = [
  {
    method: 'POST',
    path: '/workers/tasks/claim',
    name: 'workers.claim',
    access: 'worker',
    handle: claim,
  },
]
