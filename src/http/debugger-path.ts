import { API_ROOTS } from './router.js'

/**
 * Checks a debugger `basePath` at createEngine time and returns it without a trailing slash.
 * It must be absolute, not `/`, free of dot segments, queries and escapes, and must not
 * overlap the API (`/health`, `/runs`, `/definitions`, …), which would shadow routes.
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
      `debugger.basePath "${basePath}" overlaps the API paths ${[...API_ROOTS].map((r) => `/${r}`).join(', ')}`,
    )
  }
  return trimmed
}

/** True when `pathname` is the debugger's basePath or below it. */
export const isUnderBasePath = (pathname: string, basePath: string): boolean =>
  pathname === basePath || pathname.startsWith(`${basePath}/`)
