import type { EventEnvelope } from './envelope.js'

/** Folds a run's events into a named value (`project`, `GET /runs/:id/projections/:name`). */
export interface ProjectionDefinition<S = any> {
  readonly kindOf: 'projection'
  readonly initial: S
  reduce(state: S, event: EventEnvelope): S
}

export function defineProjection<S>(config: {
  initial: S
  reduce: (state: S, event: EventEnvelope) => S
}): ProjectionDefinition<S> {
  return Object.freeze({ ...config, kindOf: 'projection' as const })
}

export function foldProjection<S>(
  projection: ProjectionDefinition<S>,
  events: readonly EventEnvelope[],
  from: S = projection.initial,
): S {
  let state = from
  for (const event of events) state = projection.reduce(state, event)
  return state
}
