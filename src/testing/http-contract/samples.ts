import type { Route } from '../../http/route-types.js'
import { ROUTES } from '../../http/routes/index.js'
import { external, release } from '../engine-contract/definitions.js'
import type { HostWorld } from './host-world.js'

/** A valid request for one route of the table, against the runs `seedRuns` made. */
export interface RouteSample {
  label: string
  route: Route
  method: string
  path: string
  body?: unknown
  headers?: Record<string, string>
  sse?: boolean
  /**
   * What an authorized request answers when the seeded runs cannot make it succeed (an
   * operator action on an attempt in another state): authorization held, the route refused
   * the request itself. Without it, an authorized request answers 2xx.
   */
  authorized?: { status: number; code: string }
}

export const START_RELEASE = {
  kind: 'workflow',
  definitionName: release.name,
  input: { topic: 'Skein' },
}

/** Runs every sample can address: r1 parked on its gate, r2 with an ambiguous effect. */
export interface SeededRuns {
  /** The id of r2's ambiguous effect (an operator may retry it). */
  effectId: string
}

/**
 * Starts r1 (`release`, parked on its approval gate) and r2 (`external`, whose effect has no
 * executor and is ambiguous), with `headers` (a credential that may write).
 */
export async function seedRuns(
  w: HostWorld,
  headers: Record<string, string> = {},
): Promise<SeededRuns> {
  const r1 = await w.call('POST', '/runs', { ...START_RELEASE, runId: 'r1' }, headers)
  const r2 = await w.call(
    'POST',
    '/runs',
    { kind: 'workflow', definitionName: external.name, runId: 'r2' },
    headers,
  )
  if (r1.status !== 200 || r2.status !== 200) {
    throw new Error(`http host contract: seeding runs failed: ${r1.text} ${r2.text}`)
  }
  const { effects } = (await w.call('GET', '/runs/r2/effects', undefined, headers)).body
  return { effectId: effects[0].effectId }
}

/** The schedule every HTTP host contract engine has (`HttpHostSetup.schedules`). */
export const SAMPLE_SCHEDULE = 'nightly'

const BODIES: Record<string, unknown> = {
  'runs.start': { ...START_RELEASE, runId: 'new-run' },
  'schedules.create': {
    name: 'hourly',
    cron: '0 * * * *',
    start: { kind: 'workflow', definitionName: release.name, input: { topic: 'hourly' } },
  },
  'schedules.update': { description: 'every night' },
  'schedules.backfill': { from: '2020-01-01T00:00:00Z', to: '2020-01-01T00:00:00Z' },
  'runs.signal': { events: [{ type: 'app.ping', payload: { n: 1 } }] },
  'effects.callback': { attempt: 1, kind: 'heartbeat' },
  'workers.claim': {},
  // A dry run: counts, writes nothing (the contract's "writes nothing" cases hold for it).
  'operations.runs.retry': { filter: { status: 'failed' }, dryRun: true },
  'operations.runs.wake': { filter: { status: 'running' }, dryRun: true },
  'operations.runs.cancel': { filter: { status: 'running' }, dryRun: true },
  // r1 again from its gate (node review): a new run, r1 untouched.
  'runs.fork': { atNode: 'review', runId: 'forked' },
  // Dry runs to the version the runs are on: checked, nothing to move, nothing written.
  'operations.runs.migrate': {
    filter: { definitionName: release.name },
    toVersion: release.version,
    dryRun: true,
  },
  'runs.migrate': { toVersion: release.version, dryRun: true },
  // An archive with no events: authorized, then refused whole (restoring has its own tests).
  'operations.restore': {
    run: { format: 1, runId: 'restored', head: 1, tail: 0, events: [], snapshot: null },
  },
}

/**
 * One request per route of `routes`, and a live-stream one for `runs.events`: `paramsOf` gives
 * each route's path parameters, `bodies` the body of a POST route by route name. A route
 * without a value for a path parameter throws: a new route must get a sample.
 */
export function samplesFor(
  routes: readonly Route[],
  paramsOf: (route: Route) => Record<string, string>,
  bodies: Record<string, unknown>,
): RouteSample[] {
  const out: RouteSample[] = []
  for (const route of routes) {
    // A capability route's credential is in its path (a wait URL's token): its own tests.
    if (route.access === 'capability') continue
    const params = paramsOf(route)
    let path = route.path.replace(/:(\w+)/g, (_, name: string) => {
      if (!(name in params)) throw new Error(`no sample value for :${name} in ${route.path}`)
      return params[name]
    })
    if (route.name === 'runs.replay') path += '?seq=2'
    // r1 is still running: deleting it takes `force`.
    if (route.name === 'runs.delete') path += '?force=true'
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

/** A valid request for every route of the table, against the runs `seedRuns` made. */
export function routeSamples(seeded: SeededRuns): RouteSample[] {
  const params = {
    effectId: encodeURIComponent(seeded.effectId),
    name: 'pendingApprovals',
    schedule: SAMPLE_SCHEDULE,
  }
  // The effect routes address r2, whose effect is the one an operator may retry.
  const samples = samplesFor(
    ROUTES,
    (route) => ({ ...params, id: route.path.includes(':effectId') ? 'r2' : 'r1' }),
    {
      ...BODIES,
      'workers.callbacks': {
        callbacks: [{ runId: 'r2', effectId: seeded.effectId, attempt: 1, kind: 'heartbeat' }],
      },
    },
  )
  // r2's effect is an external one left ambiguous, not a worker attempt: requeue and fail are
  // authorized and then refused for its state (their own tests cover worker attempts).
  for (const sample of samples) {
    if (sample.route.name === 'effects.requeue' || sample.route.name === 'effects.fail')
      sample.authorized = { status: 409, code: 'EFFECT_NOT_RETRYABLE' }
    if (sample.route.name === 'operations.restore')
      sample.authorized = { status: 400, code: 'INVALID_REQUEST' }
  }
  return samples
}

/** The labels of `routeSamples`, known before any run exists (for `it.each`). */
export const SAMPLE_LABELS: readonly string[] = ROUTES.flatMap((route) =>
  route.access === 'capability'
    ? []
    : route.name === 'runs.events'
      ? [route.name, 'runs.events (SSE)']
      : [route.name],
)

/** Every run's log, to compare before and after a request that must write nothing. */
export async function dumpRuns(w: HostWorld, headers: Record<string, string> = {}) {
  const logs: unknown[] = []
  for (const runId of ['r1', 'r2', 'new-run']) {
    const res = await w.call('GET', `/runs/${runId}/events`, undefined, headers)
    logs.push(res.status === 200 ? res.body.events : res.status)
  }
  return JSON.stringify(logs)
}
