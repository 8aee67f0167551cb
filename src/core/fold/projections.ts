import type { EventEnvelope } from '../envelope.js'
import type { Registry } from '../registry.js'
import type { RunFold } from './run-fold.js'

// A fold holds a projection's value exactly when `fold.projections` has its name: then the value
// is the projection folded over every event from seq 1 to the fold's `lastSeq`. Nothing else
// (engine options included) decides what a fold or a snapshot holds.

export const holdsProjection = (fold: RunFold, name: string): boolean =>
  Object.hasOwn(fold.projections, name)

/**
 * At a run's first event, starts holding every registered projection when the engine keeps
 * projections in folds (`registry.foldProjections`).
 */
export function startProjections(registry: Registry, fold: RunFold): void {
  if (!registry.foldProjections) return
  for (const { name, projection } of registry.projectionList) {
    fold.projections[name] = projection.initial
  }
}

/**
 * Folds `event` into every projection the fold holds. A held projection no registered module
 * provides is dropped: this engine cannot keep it current, and a stale value must never pass
 * for a held one.
 */
export function reduceProjections(registry: Registry, fold: RunFold, event: EventEnvelope): void {
  for (const name in fold.projections) {
    const projection = registry.projections.get(name)
    if (projection) fold.projections[name] = projection.reduce(fold.projections[name], event)
    else delete fold.projections[name]
  }
}

/** Registered projections the fold does not hold. */
export function missingProjections(registry: Registry, fold: RunFold): string[] {
  const missing: string[] = []
  for (const { name } of registry.projectionList) {
    if (!holdsProjection(fold, name)) missing.push(name)
  }
  return missing
}
