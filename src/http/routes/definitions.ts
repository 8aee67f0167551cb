import { jsonResponse } from '../error-response.js'
import type { Route } from '../route-types.js'

export const definitionRoutes: Route[] = [
  {
    method: 'GET',
    path: '/definitions',
    name: 'definitions.list',
    access: 'read',
    handle: async (ctx) => jsonResponse({ definitions: await ctx.engine.listDefinitions() }),
  },
  {
    method: 'GET',
    path: '/queues',
    name: 'queues.list',
    access: 'read',
    handle: async (ctx) => jsonResponse({ queues: await ctx.engine.queues() }),
  },
]
