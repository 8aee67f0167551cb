import type { Route } from '../route-types.js'
import { cancelRoutes } from './cancel.js'
import { definitionRoutes } from './definitions.js'
import { effectRoutes } from './effects.js'
import { forkRoutes } from './fork.js'
import { healthRoutes } from './health.js'
import { operationRoutes } from './operations.js'
import { runEventRoutes } from './run-events.js'
import { runInspectRoutes } from './run-inspect.js'
import { runRoutes } from './runs.js'
import { scheduleRoutes } from './schedules.js'
import { waitUrlRoutes } from './wait-urls.js'
import { workerRoutes } from './worker-tasks.js'

/** Every HTTP route of the embed handler, in one table (docs and the auth matrix read it). */
export const ROUTES: readonly Route[] = Object.freeze([
  ...healthRoutes,
  ...runRoutes,
  ...definitionRoutes,
  ...runEventRoutes,
  ...runInspectRoutes,
  ...effectRoutes,
  ...forkRoutes,
  ...operationRoutes,
  ...cancelRoutes,
  ...workerRoutes,
  ...scheduleRoutes,
  ...waitUrlRoutes,
])
