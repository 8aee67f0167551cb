import type { Json } from '../core/json.js'
import { errorResponse, httpError } from './error-response.js'

/**
 * What a route needs (`bearerAuth` levels; the debugger is `read`). `capability`: the request
 * carries its own credential (a wait URL's token), so no API token is asked for; a hook still
 * sees it and may refuse (an address allow-list).
 */
export type Access = 'read' | 'write' | 'worker' | 'operations' | 'capability'

export interface AuthorizeContext {
  route: string
  access: Access
  runId?: string
  name?: string
}

/** Allow (optionally naming the caller's identity), or deny with this response. */
export type AuthorizeResult = true | { identity: Json } | Response
/** The `authorize` option (docs/http.md, "Authentication"): runs before any route's work. */
export type AuthorizeHook = (
  request: Request,
  context: AuthorizeContext,
) => AuthorizeResult | Promise<AuthorizeResult>

export type AuthorizeOutcome =
  | { ok: true; identity: Json | undefined }
  | { ok: false; response: Response }

/** Access levels that stay closed until a hook explicitly opens them (docs/http.md, "Authorization"). */
const CLOSED_BY_DEFAULT = new Set(['worker', 'operations'])

export const notConfigured = (context: AuthorizeContext): Response =>
  errorResponse(
    httpError(
      'NOT_CONFIGURED',
      `${context.access} routes are disabled: pass an authorize hook (e.g. bearerAuth({ ${context.access}: token })) to enable them`,
      { route: context.route, access: context.access },
    ),
  )

/**
 * A Response from any realm or class: undici's, the Node adapter's lightweight one (which
 * replaces the global once a server starts), or one a hook got from its own fetch.
 */
export const isResponse = (value: unknown): value is Response =>
  value instanceof Response ||
  (typeof value === 'object' &&
    value !== null &&
    typeof (value as Response).status === 'number' &&
    typeof (value as Response).headers?.get === 'function' &&
    typeof (value as Response).arrayBuffer === 'function')

/**
 * Runs the hook (or the default policy) for one request, before any body parsing or store
 * access. The hook fails closed: anything but `true`, `{ identity }` or a Response is a 403,
 * and a throwing hook is a 500 that reveals nothing.
 */
export async function authorizeRequest(
  hook: AuthorizeHook | undefined,
  request: Request,
  context: AuthorizeContext,
): Promise<AuthorizeOutcome> {
  if (!hook) {
    if (CLOSED_BY_DEFAULT.has(context.access))
      return { ok: false, response: notConfigured(context) }
    return { ok: true, identity: undefined }
  }
  let result: unknown
  try {
    result = await hook(request, context)
  } catch {
    return { ok: false, response: errorResponse(new Error('authorize hook failed')) }
  }
  if (result === true) return { ok: true, identity: undefined }
  if (isResponse(result)) return { ok: false, response: result }
  if (result !== null && typeof result === 'object' && 'identity' in result) {
    return { ok: true, identity: (result as { identity: Json }).identity }
  }
  return {
    ok: false,
    response: errorResponse(httpError('FORBIDDEN', 'request is not authorized for this route')),
  }
}
