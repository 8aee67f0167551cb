import { jsonResponse } from '../error-response.js'
import type { Route } from '../route-types.js'

export const healthRoutes: Route[] = [
  {
    method: 'GET',
    path: '/health',
    name: 'health',
    access: 'read',
    handle: async () => jsonResponse({ ok: true }),
  },
]
