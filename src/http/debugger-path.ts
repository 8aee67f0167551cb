import { API_ROOTS } from './router.js'

/**
 * A base path as plain segments without a trailing slash (`'/skein/'` → `'/skein'`), or a
 * TypeError naming `what`: absolute, free of dot segments, queries, escapes and spaces.
 */
function plainPath(basePath: unknown, what: string): string {
  if (typeof basePath !== 'string' || !basePath.startsWith('/')) {
    throw new TypeError(`${what} must be an absolute path like "/skein", got ${String(basePath)}`)
  }
  const trimmed = basePath.replace(/\/+$/, '')
  const segments = trimmed.split('/').slice(1)
  if (segments.some((s) => s === '' || s === '.' || s === '..' || /[?#%\\\s]/.test(s))) {
    throw new TypeError(`${what} "${basePath}" must be plain path segments`)
  }
  return trimmed
}

/**
 * Checks the API's `http.basePath` at createEngine time: `''` (the default, or `/`) serves the
 * API at the root; otherwise the API's paths all start with it.
 *
 * @example validateApiBasePath('/skein/') // → '/skein'
 */
export function validateApiBasePath(basePath: unknown): string {
  if (basePath === undefined || basePath === '/') return ''
  return plainPath(basePath, 'http.basePath')
}

/**
 * Checks a debugger `basePath` at createEngine time and returns it without a trailing slash.
 * It must be absolute, not `/`, plain segments, and must not overlap the API's paths (under
 * `apiBasePath`): either would shadow the other.
 *
 * @example validateDebuggerBasePath('/_skein/') // → '/_skein'
 */
export function validateDebuggerBasePath(basePath: unknown, apiBasePath = ''): string {
  const trimmed = plainPath(basePath, 'debugger.basePath')
  if (trimmed === '') {
    throw new TypeError('debugger.basePath must not be "/" (it would shadow the API)')
  }
  const apiPaths = [...API_ROOTS].map((root) => `${apiBasePath}/${root}`)
  if (apiPaths.some((api) => isUnderBasePath(trimmed, api) || isUnderBasePath(api, trimmed))) {
    throw new TypeError(
      `debugger.basePath "${basePath}" overlaps the API paths ${apiPaths.join(', ')}`,
    )
  }
  return trimmed
}

/**
 * Checks the whole `debugger` option at createEngine time: without a UI provider every
 * debugger request would fail, so a missing or malformed `ui` is refused up front.
 *
 * @example validateDebuggerHost({ basePath: '/_skein', ui: debuggerUi() })
 */
export function validateDebuggerHost(host: unknown, apiBasePath = ''): string {
  if (host === null || typeof host !== 'object') {
    throw new TypeError('debugger must be an object like { basePath: "/_skein", ui }')
  }
  const { basePath, ui } = host as { basePath?: unknown; ui?: { fetch?: unknown } | null }
  if (typeof ui?.fetch !== 'function') {
    throw new TypeError(
      'debugger.ui must be a UI provider with a fetch(request, { basePath }) method: pass ui: debuggerUi() from skein/debugger',
    )
  }
  return validateDebuggerBasePath(basePath, apiBasePath)
}

/** True when `pathname` is the debugger's basePath or below it. */
export const isUnderBasePath = (pathname: string, basePath: string): boolean =>
  pathname === basePath || pathname.startsWith(`${basePath}/`)
