import { jsonResponse } from '../error-response.js'
import { readJsonBodyText } from '../json-body.js'
import type { Route } from '../route-types.js'

/**
 * `POST /wait-urls/:token` (docs/schedules.md, "Wait URLs"): the token is the credential
 * (`capability` access: no API token needed), and the route's path is never observed or
 * logged as sent (it holds the token).
 */
export const waitUrlRoutes: Route[] = [
  {
    method: 'POST',
    path: '/wait-urls/:token',
    name: 'waitUrls.complete',
    access: 'capability',
    secretPath: true,
    handle: async (ctx) => {
      const { value, text } = await readJsonBodyText(ctx.request, ctx.options.maxRequestBytes)
      const outcome = await ctx.engine.completeWaitUrl(ctx.params.token as string, {
        body: value,
        text,
        header: (name) => ctx.request.headers.get(name),
      })
      return jsonResponse(outcome)
    },
  },
]
