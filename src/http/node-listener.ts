import type { IncomingMessage } from 'node:http'
import { ServerResponse } from 'node:http'
import { getRequestListener, RequestError } from '@hono/node-server'
import { errorResponse, httpError } from './error-response.js'
import { writeDirect } from './node-write.js'

/** The adapter's marker for "the response was written already": no body, nothing to write. */
const ALREADY_SENT = new Response(null, { headers: { 'x-hono-already-sent': '1' } })

export type NodeListener = (incoming: IncomingMessage, outgoing: ServerResponse) => Promise<void>

/**
 * A Node request listener over a Web handler, shared by `serve` and the
 * Express/Connect middleware. Skein's own JSON bodies and SSE streams go to the socket directly
 * (node-write.ts); a hook's or a UI's Response is written by the adapter. `unhandled` decides
 * what a `null` (a path outside the API) becomes: a Response to write, or `undefined` when
 * someone else answers (the middleware's `next()`). Requests the adapter cannot even build
 * (bad Host, backslash paths) become a JSON 400.
 */
export function createNodeListener(
  fetch: (request: Request) => Promise<Response | null>,
  unhandled: (incoming: IncomingMessage) => Response | undefined,
): NodeListener {
  return getRequestListener(
    async (request: Request, env: { incoming: unknown; outgoing: unknown }) => {
      let response: Response | null
      try {
        response = await fetch(request)
      } catch (error) {
        // The handler answers its own errors; this is an engine that failed to become ready.
        response = errorResponse(error)
      }
      response ??= unhandled(env.incoming as IncomingMessage) ?? null
      if (response === null) return ALREADY_SENT
      const { outgoing } = env
      if (outgoing instanceof ServerResponse && writeDirect(response, outgoing)) return ALREADY_SENT
      return response
    },
    {
      // A library must not replace the process's global Request/Response (the adapter's
      // lighter classes were faster in bench/http.ts, but every user's code would see them):
      // see docs/decisions.md. authorize.ts duck-types Responses either way.
      overrideGlobalObjects: false,
      // Only requests the adapter could not build reach this (bad Host, backslash paths).
      errorHandler: (error) =>
        error instanceof RequestError
          ? errorResponse(httpError('INVALID_REQUEST', 'malformed HTTP request'))
          : errorResponse(error),
    },
  ) as NodeListener
}
