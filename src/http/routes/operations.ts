import { jsonResponse } from '../error-response.js'
import type { Route } from '../route-types.js'

export const operationRoutes: Route[] = [
  {
    method: 'POST',
    path: '/operations/deadlines/rescan',
    name: 'operations.rescan',
    access: 'operations',
    handle: async (ctx) => jsonResponse({ scheduled: await ctx.engine.recoverDeadlines() }),
  },
  {
    method: 'GET',
    path: '/operations/projectors',
    name: 'operations.projectors',
    access: 'operations',
    handle: async (ctx) => jsonResponse({ projectors: await ctx.engine.projectors() }),
  },
  {
    method: 'GET',
    path: '/operations/retention',
    name: 'operations.retention',
    access: 'operations',
    handle: async (ctx) => jsonResponse({ retention: await ctx.engine.retention() }),
  },
]
