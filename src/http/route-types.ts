import type { Json } from '../core/json.js'
import type { TerminalWaits } from '../runtime/await-terminal.js'
import type { Causes } from '../runtime/causes.js'
import type { Engine } from '../runtime/engine-types.js'
import type { Observation } from '../runtime/options.js'
import type { Access, AuthorizeHook } from './authorize.js'
import type { DebuggerHost } from './http-options.js'
import type { LiveStreams } from './live-streams.js'
import type { SseLimits, SseOptions, SseTimers } from './sse-limits.js'

/** What every route handler receives once routing and authorization have passed. */
export interface RouteContext {
  request: Request
  url: URL
  /** Decoded path parameters (`:id` → `params.id`). */
  params: Record<string, string>
  /** The authorize hook's identity, when it returned one. */
  identity: Json | undefined
  engine: Engine
  options: HandlerOptions
  streams: LiveStreams
  sse: SseContext
  /** Long-polls on runs (`GET /runs/:id?wait=terminal`), ended when the server closes. */
  waits: TerminalWaits
  /** Reads and validates the JSON body (415/413/400 as needed). */
  body(): Promise<Json>
}

/**
 * One route: data, so auth, docs and the auth-matrix test all key off `name` and `access`
 *. `path` uses `:param` segments.
 */
export interface Route {
  method: 'GET' | 'POST' | 'DELETE'
  path: string
  name: string
  access: Access
  /**
   * The query parameters the route reads. Any other is a 400 INVALID_REQUEST: a typo or a
   * parameter the server does not have must not be silently answered as if it were absent.
   */
  query?: readonly string[]
  /** The path holds a secret (a wait URL's token): observations get the route's pattern. */
  secretPath?: boolean
  handle(context: RouteContext): Promise<Response>
}

export interface HandlerOptions {
  authorize?: AuthorizeHook
  debugger?: DebuggerHost
  /** The API's path prefix (validated, no trailing slash); '' serves it at the root. */
  basePath?: string
  maxRequestBytes: number
  maxEventBytes: number
  /** The opt-in cancel routes are served (`http.cancelRoutes`); off, they answer 503. */
  cancelRoutes?: boolean
  /** Bounds of live streams (defaults in sse-limits.ts); `timers` for tests. */
  sse?: SseOptions & { timers?: SseTimers }
  /**
   * The engine's observer sink when it observes (http.request/http.response), and its causes
   * when the observer traces them.
   */
  observing?: { observe(observation: Omit<Observation, 'at'>): void; causes?: Causes }
}

/** The resolved SSE bounds and timers every stream of one handler uses. */
export interface SseContext {
  limits: SseLimits
  timers: SseTimers
  /** Events per catch-up page (`pageLimit` of the limits and the engine's maxEventBytes). */
  pageLimit: number
}
