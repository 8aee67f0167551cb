import type { Route } from '../../src/http/route-types.js'

/**
 * A well-formed request for each route of the table, for the bad-input corpus and generator
 * to mutate (a new route without a sample fails loudly). The host contract's own samples,
 * valid against real runs, are in src/testing/http-contract/samples.ts.
 */
export interface RouteSample {
  label: string
  route: Route
  method: string
  path: string
  body?: unknown
  headers?: Record<string, string>
  sse?: boolean
}

const BODIES: Record<string, unknown> = {
  'runs.start': { kind: 'test', definitionName: 'echo', runId: 'new-run' },
  'runs.signal': { events: [{ type: 'ping', payload: { n: 1 } }] },
  'effects.callback': { attempt: 1, kind: 'complete', result: { ok: true } },
}

const PARAMS: Record<string, string> = { id: 'r1', effectId: 'e1', name: 'count' }

export function samplesOf(routes: readonly Route[]): RouteSample[] {
  const params = PARAMS
  const bodies = BODIES
  const out: RouteSample[] = []
  for (const route of routes) {
    let path = route.path.replace(/:(\w+)/g, (_, name: string) => {
      if (!(name in params)) throw new Error(`no sample value for :${name} in ${route.path}`)
      return params[name]
    })
    if (route.name === 'runs.replay') path += '?seq=2'
    const sample: RouteSample = { label: route.name, route, method: route.method, path }
    if (route.method === 'POST' && route.name in bodies) sample.body = bodies[route.name]
    out.push(sample)
    if (route.name === 'runs.events') {
      out.push({
        ...sample,
        label: 'runs.events (SSE)',
        sse: true,
        headers: { accept: 'text/event-stream' },
      })
    }
  }
  return out
}
