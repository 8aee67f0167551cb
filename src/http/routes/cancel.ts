import { NotConfiguredError } from '../../core/errors.js'
import { jsonResponse } from '../error-response.js'
import type { Route, RouteContext } from '../route-types.js'
import { expectObject, optionalId } from '../validate.js'
import { bulk } from './operations.js'

/** `http.cancelRoutes`: a boolean when given (checked by `createEngine`, not at a request). */
export function checkCancelRoutes(value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new TypeError(`http.cancelRoutes must be a boolean, got ${JSON.stringify(value)}`)
  }
}

/**
 * The cancel routes answer only on a host that opted in (docs/operating-runs.md, "Cancelling
 * over HTTP"): cancellation is an embed method by default. Checked after authorization, before
 * the body is read.
 */
function requireOptIn(ctx: RouteContext, route: string): void {
  if (ctx.options.cancelRoutes === true) return
  throw new NotConfiguredError(
    `cancellation over HTTP is off on this host: it is an embed method (engine.cancel) unless the host passes createEngine({ http: { cancelRoutes: true } })`,
    { route, access: 'operations' },
  )
}

export const cancelRoutes: Route[] = [
  {
    // One run, or one thread of it (`{ threadId }`): the engine's `cancel`.
    method: 'POST',
    path: '/runs/:id/cancel',
    name: 'runs.cancel',
    access: 'operations',
    handle: async (ctx) => {
      requireOptIn(ctx, 'runs.cancel')
      // The body is optional: a request without one cancels the run.
      const { headers } = ctx.request
      const length = headers.get('content-length')
      const hasBody = headers.get('content-type') !== null || (length !== null && length !== '0')
      const body = hasBody ? expectObject(await ctx.body(), ['threadId']) : {}
      const threadId = optionalId(body, 'threadId')
      const state = await ctx.engine.cancel(ctx.params.id, threadId)
      return jsonResponse({ runId: ctx.params.id, state })
    },
  },
  {
    method: 'POST',
    path: '/operations/runs/cancel',
    name: 'operations.runs.cancel',
    access: 'operations',
    handle: async (ctx) => {
      requireOptIn(ctx, 'operations.runs.cancel')
      return bulk(ctx, 'cancel')
    },
  },
]
