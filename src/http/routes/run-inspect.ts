import { InvalidRequestError } from '../../core/errors.js'
import { jsonResponse } from '../error-response.js'
import type { Route } from '../route-types.js'
import { intQuery } from '../validate.js'

/** Read-only views of one run. None of them executes anything. */
export const runInspectRoutes: Route[] = [
  {
    method: 'GET',
    path: '/runs/:id/threads',
    name: 'runs.threads',
    access: 'read',
    handle: async (ctx) =>
      jsonResponse({ runId: ctx.params.id, threads: await ctx.engine.listThreads(ctx.params.id) }),
  },
  {
    method: 'GET',
    path: '/runs/:id/status',
    name: 'runs.status',
    access: 'read',
    handle: async (ctx) => jsonResponse(await ctx.engine.inspectRun(ctx.params.id)),
  },
  {
    method: 'GET',
    path: '/runs/:id/effects',
    name: 'runs.effects',
    access: 'read',
    handle: async (ctx) =>
      jsonResponse({ runId: ctx.params.id, effects: await ctx.engine.listEffects(ctx.params.id) }),
  },
  {
    method: 'GET',
    path: '/runs/:id/replay',
    name: 'runs.replay',
    access: 'read',
    query: ['seq'],
    async handle(ctx) {
      const seq = intQuery(ctx.url, 'seq', 1)
      if (seq === undefined) throw new InvalidRequestError('query parameter seq is required')
      const step = await ctx.engine.replayTo(ctx.params.id, seq)
      // null (no step at that seq) is the embed result too, so it is a 200, not a 404 — but
      // only for a run that exists: getEvents throws RUN_NOT_FOUND for one that does not.
      if (step === null) await ctx.engine.getEvents(ctx.params.id, { limit: 1 })
      return jsonResponse({ runId: ctx.params.id, step })
    },
  },
  {
    method: 'GET',
    path: '/runs/:id/projections/:name',
    name: 'runs.projection',
    access: 'read',
    async handle(ctx) {
      const { id, name } = ctx.params
      return jsonResponse({ runId: id, name, value: await ctx.engine.project(id, name) })
    },
  },
]
