import { ProjectionNotFoundError } from '../core/errors.js'
import type { RunFold } from '../core/fold.js'
import { foldProjection, type ProjectionDefinition } from '../core/projection.js'
import type { EngineContext } from './context.js'

/**
 * A projection's value for a run. Registered projections are kept in the fold (and so in
 * snapshots, surviving trims); an unregistered one is folded from the retained log.
 */
export async function projectRun<S>(
  ctx: EngineContext,
  fold: RunFold,
  projection: ProjectionDefinition<S> | string,
): Promise<S> {
  const registry = ctx.registry
  let name: string | undefined
  let definition: ProjectionDefinition<S> | undefined
  if (typeof projection === 'string') {
    const found = registry.projections.get(projection)
    if (!found) {
      throw new ProjectionNotFoundError(`no projection named "${projection}" is registered`, {
        name: projection,
      })
    }
    name = projection
    definition = found as ProjectionDefinition<S>
  } else {
    definition = projection
    for (const [registeredName, registered] of registry.projections)
      if (registered === projection) name = registeredName
  }
  // With trimming on, registered projections are folded with the run (they must outlive the
  // trimmed events); otherwise every projection folds the retained log on demand.
  if (name !== undefined && registry.foldProjections) {
    return (fold.projections[name] ?? definition.initial) as S
  }
  const events = await ctx.store.read(fold.state.runId, { fromSeq: 1 })
  return foldProjection(definition, events)
}
