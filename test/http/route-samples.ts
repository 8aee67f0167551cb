import type { Route } from '../../src/http/route-types.js'
import { type RouteSample, samplesFor } from '../../src/testing/http-contract/samples.js'

export type { RouteSample }

const BODIES: Record<string, unknown> = {
  'runs.start': { kind: 'test', definitionName: 'echo', runId: 'new-run' },
  'runs.signal': { events: [{ type: 'ping', payload: { n: 1 } }] },
  'effects.callback': { attempt: 1, kind: 'complete', result: { ok: true } },
  'runs.fork': { atNode: 'review' },
  'runs.cancel': { threadId: 'no-such-thread' },
}

const PARAMS: Record<string, string> = {
  id: 'r1',
  effectId: 'e1',
  name: 'count',
  schedule: 'nightly',
}

/**
 * A well-formed request for each route of the table, for the bad-input corpus and generator
 * to mutate (a new route without a sample fails loudly). The host contract's own samples,
 * valid against real runs, are `routeSamples` beside `samplesFor`.
 */
export const samplesOf = (routes: readonly Route[]): RouteSample[] =>
  samplesFor(routes, () => PARAMS, BODIES)
