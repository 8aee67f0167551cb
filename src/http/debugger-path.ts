import { API_ROOTS } from './router.js'

/**
 * Checks a debugger `basePath` at createEngine time and returns it without a trailing slash.
 * It must be absolute, not `/`, free of dot segments, queries and escapes, and must not
 * overlap the API (`/health`, `/runs`, `/operations`), which would shadow routes.
 *
 * @example validateDebuggerBasePath('/_skein/') // → '/_skein'
 */
export function validateDebuggerBasePath(basePath: unknown): string {
  if (typeof basePath !== 'string' || !basePath.startsWith('/')) {
    throw new TypeError(
      `debugger.basePath must be an absolute path like "/_skein", got ${String(basePath)}`,
    )
  }
  const trimmed = basePath.replace(/\/+$/, '')
  if (trimmed === '')
    throw new TypeError('debugger.basePath must not be "/" (it would shadow the API)')
  const segments = trimmed.split('/').slice(1)
  if (segments.some((s) => s === '' || s === '.' || s === '..' || /[?#%\\\s]/.test(s))) {
    throw new TypeError(`debugger.basePath "${basePath}" must be plain path segments`)
  }
  if (API_ROOTS.has(segments[0])) {
    throw new TypeError(
      `debugger.basePath "${basePath}" overlaps the API paths /health, /runs and /operations`,
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
export function validateDebuggerHost(host: unknown): string {
  if (host === null || typeof host !== 'object') {
    throw new TypeError('debugger must be an object like { basePath: "/_skein", ui }')
  }
  const { basePath, ui } = host as { basePath?: unknown; ui?: { fetch?: unknown } | null }
  if (typeof ui?.fetch !== 'function') {
    throw new TypeError(
      'debugger.ui must be a UI provider with a fetch(request, { basePath }) method: pass ui: debuggerUi() from skein/debugger',
    )
  }
  return validateDebuggerBasePath(basePath)
}

/** True when `pathname` is the debugger's basePath or below it. */
export const isUnderBasePath = (pathname: string, basePath: string): boolean =>
  pathname === basePath || pathname.startsWith(`${basePath}/`)
