import { InvalidRequestError } from '../core/errors.js'
import type { Route } from './route-types.js'

/** First path segments the API owns; anything else is the host app's (the handler returns null). */
export const API_ROOTS: ReadonlySet<string> = new Set([
  'health',
  'runs',
  'definitions',
  'queues',
  'operations',
  'workers',
  'schedules',
  'wait-urls',
])

interface CompiledRoute {
  route: Route
  /** A literal segment, or `null` for a parameter. */
  segments: Array<string | null>
  names: string[]
}

export type RouteMatch =
  | { kind: 'route'; route: Route; params: Record<string, string> }
  | { kind: 'method'; allow: string[] }
  | { kind: 'none' }

/**
 * Matches decoded path segments against the route table. Literal segments win over
 * parameters at the same position (`/runs/summaries` is not `/runs/:id`).
 */
export function createRouter(routes: readonly Route[]) {
  const compiled: CompiledRoute[] = routes.map((route) => {
    const parts = route.path.split('/').slice(1)
    return {
      route,
      segments: parts.map((p) => (p.startsWith(':') ? null : p)),
      names: parts.filter((p) => p.startsWith(':')).map((p) => p.slice(1)),
    }
  })

  const shapeMatches = (c: CompiledRoute, segments: string[]) =>
    c.segments.length === segments.length &&
    c.segments.every((literal, i) => literal === null || literal === segments[i])

  const specificity = (c: CompiledRoute) => c.segments.filter((s) => s !== null).length

  return {
    match(method: string, segments: string[]): RouteMatch {
      const candidates = compiled.filter((c) => shapeMatches(c, segments))
      if (candidates.length === 0) return { kind: 'none' }
      // Only the most literal shape counts, so GET /runs/summaries never falls to /runs/:id.
      const best = Math.max(...candidates.map(specificity))
      const shaped = candidates.filter((c) => specificity(c) === best)
      const hit = shaped.find((c) => c.route.method === method)
      if (!hit) return { kind: 'method', allow: [...new Set(shaped.map((c) => c.route.method))] }
      const params: Record<string, string> = Object.create(null)
      let n = 0
      hit.segments.forEach((literal, i) => {
        if (literal === null) params[hit.names[n++]] = segments[i]
      })
      return { kind: 'route', route: hit.route, params }
    },
  }
}

const MAX_SEGMENT_LENGTH = 512

/**
 * Splits and decodes a pathname. Returns null when the path is outside the API (unless
 * `claimAll`: under a base path every path is the API's). Throws a 400 for escapes that could
 * change a segment's meaning once decoded: invalid escapes, an encoded `/` or `\`, control
 * characters, and `.`/`..` segments.
 */
export function parseApiPath(pathname: string, claimAll = false): string[] | null {
  const raw = pathname.split('/').slice(1)
  if (!claimAll && !API_ROOTS.has(raw[0] ?? '')) return null
  return raw.map((segment) => {
    if (segment.length > MAX_SEGMENT_LENGTH) {
      throw new InvalidRequestError(`path segment longer than ${MAX_SEGMENT_LENGTH} characters`)
    }
    let decoded: string
    try {
      decoded = decodeURIComponent(segment)
    } catch {
      throw new InvalidRequestError('path contains an invalid percent-escape')
    }
    // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
    if (/[/\\\u0000-\u001f\u007f]/.test(decoded) || decoded === '.' || decoded === '..') {
      throw new InvalidRequestError('path segment contains a forbidden character or dot segment')
    }
    return decoded
  })
}
