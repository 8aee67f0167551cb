import type { Route } from '../http/route-types.js'
import { ROUTES } from '../http/routes/index.js'
import { notSupported } from './host-engine.js'

/**
 * The routes an actor host answers 501 NOT_SUPPORTED (docs/http.md, "Actor host"): the queues,
 * the drift report, restore, fork, cancel and migrate by filter, and schedules (each run is its
 * own cell: schedules live on an engine over a shared store). Its run listings walk the run
 * registry instead.
 */
export const NOT_SUPPORTED_ROUTES: readonly string[] = [
  'queues.list',
  // Bulk actions start from the listing: retry and wake do, as on the embed host; cancel and
  // migrate by filter are not yet proven on an actor host.
  'operations.runs.cancel',
  'operations.runs.migrate',
  // The drift report counts runs across the store; an actor host keeps no such count.
  'definitions.versions',
  // A cell is created by a start; a restored run has none (docs/data-lifecycle.md, "Restoring").
  'operations.restore',
  // A fork is a new run written whole, as a restored one (docs/operating-runs.md, "Fork").
  'runs.fork',
  ...ROUTES.filter((route) => route.name.startsWith('schedules.')).map((route) => route.name),
]

/**
 * The embed route table with the one difference of an actor host: the schedule routes answer 501
 * at once; the other unsupported routes keep their handlers, which check the query's names and
 * values as on the embed host, then get 501 from the host engine saying what to use instead.
 */
export const ACTOR_ROUTES: readonly Route[] = Object.freeze(
  ROUTES.map(
    (route): Route =>
      NOT_SUPPORTED_ROUTES.includes(route.name) && route.name.startsWith('schedules.')
        ? {
            ...route,
            handle: async () => {
              throw notSupported(`${route.method} ${route.path}`)
            },
          }
        : route,
  ),
)
