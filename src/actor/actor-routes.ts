import type { Route } from '../http/route-types.js'
import { ROUTES } from '../http/routes/index.js'
import { notSupported } from './host-engine.js'

/**
 * The routes an actor host answers 501 NOT_SUPPORTED (docs/http.md, "Actor host"): the queues,
 * the drift report, fork, and schedules (each run is its own cell: schedules live on
 * an engine over a shared store). Its run listings walk the run registry instead, and the bulk
 * actions start from them.
 */
export const NOT_SUPPORTED_ROUTES: readonly string[] = [
  'queues.list',
  // The drift report counts runs across the store; an actor host keeps no such count.
  'definitions.versions',
  // A fork is a new run written whole (docs/operating-runs.md, "Fork"); no start records it.
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
