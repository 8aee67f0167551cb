import { ProjectionNotFoundError, ProjectionUnavailableError } from '../core/errors.js'
import {
  holdsProjection,
  missingProjections,
  type RunFold,
  snapshotFold,
} from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import { foldProjection, type ProjectionDefinition } from '../core/projection.js'
import type { EngineContext } from './context.js'

/**
 * A projection's value for a run at the fold's seq. A projection the fold holds
 * (core/fold/projections.ts) is read from it; any other is folded from where its value can still be
 * had: the log's start, or the newest snapshot that holds it (a log trimmed behind such a
 * snapshot). When neither is left, PROJECTION_UNAVAILABLE: a partial fold would be a wrong value.
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
  if (name !== undefined && holdsProjection(fold, name)) return fold.projections[name] as S
  const [value] = await rebuild(ctx, fold, [{ name, definition }])
  if (value === undefined) {
    const runId = fold.state.runId
    throw new ProjectionUnavailableError(
      `run ${runId}: projection ${name ?? '(unregistered)'} cannot be computed: its events were trimmed before any snapshot held its value. Register it before trimming runs (trimAfterSnapshot keeps registered projections in snapshots)`,
      { runId, ...(name ? { name } : {}) },
    )
  }
  return value.state as S
}

/**
 * Makes the fold hold every registered projection whose value the store can still give, so the
 * snapshot about to be taken holds them and trimming behind it loses none. Projections whose
 * events are already gone stay unheld (nothing can bring them back).
 */
export async function holdProjections(ctx: EngineContext, fold: RunFold): Promise<void> {
  const missing = missingProjections(ctx.registry, fold).map((name) => ({
    name,
    definition: ctx.registry.projections.get(name)!,
  }))
  if (missing.length === 0) return
  const values = await rebuild(ctx, fold, missing)
  missing.forEach(({ name }, i) => {
    if (values[i] !== undefined) fold.projections[name] = values[i].state as Json
  })
}

interface Wanted {
  /** Registered name; undefined for an unregistered projection (only the log can give it). */
  name: string | undefined
  definition: ProjectionDefinition
}

/**
 * Folds each wanted projection up to the fold's seq from its newest source: the log's start
 * when the log is untrimmed, else the newest retained snapshot holding it. `undefined` for a
 * projection with no source left. One read of the events the store still has.
 */
async function rebuild(
  ctx: EngineContext,
  fold: RunFold,
  wanted: readonly Wanted[],
): Promise<Array<{ state: unknown } | undefined>> {
  const runId = fold.state.runId
  const upTo = fold.state.lastSeq
  // From the store's head (the first retained seq) on; a writer may have appended past `upTo`.
  const retained = upTo > 0 ? await ctx.store.read(runId, { fromSeq: 1, limit: upTo }) : []
  const head = retained.length > 0 ? retained[0].seq : upTo + 1
  const events = retained.filter((e) => e.seq <= upTo)
  const out: Array<{ state: unknown } | undefined> = []
  for (const { name, definition } of wanted) {
    const base =
      head <= 1
        ? { seq: 0, state: definition.initial }
        : name === undefined
          ? undefined
          : await snapshotHolding(ctx, runId, name, head, upTo)
    if (!base) {
      out.push(undefined)
      continue
    }
    const after = events.filter((e) => e.seq > base.seq)
    out.push({ state: foldProjection(definition, after, base.state) })
  }
  return out
}

/** The newest retained snapshot at or before `upTo` that holds `name`, with that value. */
async function snapshotHolding(
  ctx: EngineContext,
  runId: string,
  name: string,
  head: number,
  upTo: number,
): Promise<{ seq: number; state: unknown } | undefined> {
  const seqs = await ctx.snapshots.list(runId)
  for (let i = seqs.length - 1; i >= 0; i--) {
    const seq = seqs[i]
    if (seq > upTo) continue
    // Events after an older snapshot are gone: it cannot be caught up.
    if (seq < head - 1) return undefined
    const snapshot = await ctx.snapshots.latest(runId, seq)
    const held = snapshot?.seq === seq ? snapshotFold(snapshot) : null
    if (held && holdsProjection(held, name)) return { seq, state: held.projections[name] }
  }
  return undefined
}
