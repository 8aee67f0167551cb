import type { Json } from '../core/json.js'
import { TerminalWaits } from '../runtime/await-terminal.js'
import type { Engine } from '../runtime/engine-types.js'
import { systemClock } from '../runtime/system.js'
import { authorizeRequest } from './authorize.js'
import { isUnderBasePath } from './debugger-path.js'
import { errorResponse, httpError } from './error-response.js'
import { readJsonBody } from './json-body.js'
import { createLiveStreams } from './live-streams.js'
import type { HandlerOptions, Route, RouteContext, SseContext } from './route-types.js'
import { createRouter, parseApiPath } from './router.js'
import { ROUTES } from './routes/index.js'
import { defaultTimers, pageLimit, resolveSseLimits } from './sse-limits.js'
import { checkQuery } from './validate.js'

export interface HttpHandler {
  /** The Web-standard handler: a Response, or null for paths outside the API. */
  fetch(request: Request): Promise<Response | null>
  /** Ends every open SSE stream and long-poll (server close, engine stop). */
  closeStreams(): void
  readonly routes: readonly Route[]
}

/**
 * Builds the embed HTTP handler over an engine. Per request: route by path and method
 * (404/405 first, so the hook sees a real route), then authorize, and only then parse the
 * body or touch the store. Every failure becomes the one JSON error body.
 *
 * @example
 * const http = createHttpHandler(engine, { maxRequestBytes: 1 << 20, maxEventBytes: 1 << 20 })
 * const res = await http.fetch(new Request('http://local/runs/r1'))
 */
export function createHttpHandler(
  engine: Engine,
  options: HandlerOptions,
  routes: readonly Route[] = ROUTES,
): HttpHandler {
  const router = createRouter(routes)
  const streams = createLiveStreams()
  // Long-polls wait in wall time, whatever clock the engine runs on.
  const waits = new TerminalWaits(engine, systemClock)
  const limits = resolveSseLimits(options.sse)
  const sse: SseContext = {
    limits,
    timers: options.sse?.timers ?? defaultTimers,
    pageLimit: pageLimit(limits, options.maxEventBytes),
  }
  const debuggerHost = options.debugger
  // createEngine validated them; normalize here too so '/_skein/' and '/_skein' behave alike.
  const debuggerPath = debuggerHost?.basePath.replace(/\/+$/, '') ?? ''
  const apiPath = options.basePath?.replace(/\/+$/, '') ?? ''
  const uiDefinitions = async () => (await engine.runtime).registry.listDefinitions()

  async function handle(request: Request): Promise<Response | null> {
    let url: URL
    try {
      url = new URL(request.url)
    } catch {
      return errorResponse(httpError('INVALID_REQUEST', 'request URL is not valid'))
    }

    if (debuggerHost && isUnderBasePath(url.pathname, debuggerPath)) {
      const auth = await authorizeRequest(options.authorize, request, {
        route: 'debugger',
        access: 'read',
        name: 'debugger',
      })
      if (!auth.ok) return auth.response
      return debuggerHost.ui.fetch(request, {
        basePath: debuggerPath,
        definitions: uiDefinitions,
        capabilities: {
          cancel: options.cancelRoutes === true,
          operations: options.authorize !== undefined,
        },
      })
    }

    // Under a base path everything is the API's (an unknown path is its 404); at the root only
    // the API's own first segments are, and the rest is the host app's.
    if (apiPath && !url.pathname.startsWith(`${apiPath}/`)) return null
    const segments = parseApiPath(url.pathname.slice(apiPath.length), apiPath !== '')
    if (segments === null) return null
    const match = router.match(request.method, segments)
    if (match.kind === 'none') {
      return errorResponse(httpError('NOT_FOUND', `no route for ${url.pathname}`))
    }
    if (match.kind === 'method') {
      return errorResponse(
        httpError('METHOD_NOT_ALLOWED', `${request.method} is not allowed here`, {
          allow: match.allow,
        }),
        { allow: match.allow.join(', ') },
      )
    }

    const { route, params } = match
    const context = { route: route.name, access: route.access } as {
      route: string
      access: Route['access']
      runId?: string
    }
    if (params.id !== undefined) context.runId = params.id
    const auth = await authorizeRequest(options.authorize, request, context)
    if (!auth.ok) return auth.response
    checkQuery(url, route.query)

    let parsed: Promise<Json> | undefined
    const ctx: RouteContext = {
      request,
      url,
      params,
      identity: auth.identity,
      engine,
      options,
      streams,
      sse,
      waits,
      body: () => (parsed ??= readJsonBody(request, options.maxRequestBytes)),
    }
    const observing = options.observing
    return observing ? observed(observing, request, url, route, params.id, ctx) : route.handle(ctx)
  }

  return {
    routes,
    async fetch(request) {
      try {
        return await handle(request)
      } catch (error) {
        // Skein errors keep their code and status; anything unknown is a bare 500.
        return errorResponse(error)
      }
    },
    closeStreams() {
      streams.closeAll()
      waits.expireAll()
    },
  }
}

/**
 * Runs a routed request under a cause of its own (its request id), between an `http.request`
 * and an `http.response` observation: an observer opens a span on the first (continuing an
 * incoming `traceparent`), parents the wake passes and attempts the request causes to it, and
 * ends it on the second.
 */
async function observed(
  observing: NonNullable<HandlerOptions['observing']>,
  request: Request,
  url: URL,
  route: Route,
  runId: string | undefined,
  ctx: RouteContext,
): Promise<Response> {
  const { observe, causes } = observing
  const requestId = crypto.randomUUID()
  const base = { runId: runId ?? '', requestId }
  const traceparent = request.headers.get('traceparent') ?? undefined
  const tracestate = request.headers.get('tracestate') ?? undefined
  const method = request.method
  observe({
    type: 'http.request',
    ...base,
    method,
    route: route.path,
    name: route.name,
    path: route.secretPath ? route.path : url.pathname,
    traceparent,
    tracestate,
  })
  try {
    const handling = () => route.handle(ctx)
    const response = await (causes ? causes.run(requestId, handling) : handling())
    observe({ type: 'http.response', ...base, status: response.status })
    return response
  } catch (error) {
    // What the handler's own catch would answer, observed first.
    const response = errorResponse(error)
    const message = String((error as Error)?.message ?? error)
    observe({ type: 'http.response', ...base, status: response.status, error: message })
    return response
  }
}
