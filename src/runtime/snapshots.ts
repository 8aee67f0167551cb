import { DeterminismError } from '../core/errors.js'
import {
  cloneFold,
  emptyFold,
  foldEvents,
  foldFromSnapshot,
  isReadableSnapshot,
  type RunFold,
  readingRegistry,
  SNAPSHOT_FORMAT,
  snapshotFold,
} from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { Snapshot } from '../core/ports.js'
import type { EngineContext, RunMemory } from './context.js'
import { holdProjections } from './projections.js'

/**
 * Loads a run's fold for a writer: newest snapshot plus the events after it, and the seq that
 * snapshot covers. `null` when the run has no events. Throws DeterminismError when the log was
 * trimmed past every snapshot, UnsupportedProtocolError for a run recorded by a newer Skein.
 */
export async function loadFold(
  ctx: EngineContext,
  runId: string,
): Promise<{ fold: RunFold; snapshotSeq: number } | null> {
  const snapshot = await ctx.snapshots.latest(runId, undefined, { readOnly: true })
  const fold = await loadFrom(ctx, runId, snapshot)
  if (!fold) return null
  return { fold, snapshotSeq: isReadableSnapshot(snapshot) ? snapshot.seq : 0 }
}

/**
 * A fold for reading only (getRun, project, inspect): when the newest snapshot covers the
 * tail it is used as is, without a copy; otherwise a private copy is caught up.
 */
export async function loadFoldForRead(
  ctx: EngineContext,
  runId: string,
  tail: number,
): Promise<RunFold | null> {
  const shared = await ctx.snapshots.latest(runId, undefined, { readOnly: true })
  const fold = snapshotFold(shared)
  if (fold && shared!.seq === tail) return fold
  // Folded to be shown only: a thread of a version this host lacks keeps no kind state.
  return loadFrom(ctx, runId, shared, readingRegistry(ctx.registry))
}

async function loadFrom(
  ctx: EngineContext,
  runId: string,
  snapshot: Snapshot | null,
  registry = ctx.registry,
): Promise<RunFold | null> {
  // The snapshot may be shared (read-only): the writer gets its own copy.
  const restored = foldFromSnapshot(snapshot)
  if (restored) ctx.observe({ type: 'snapshot.loaded', runId, seq: snapshot!.seq })
  return catchUp(ctx, restored ?? emptyFold(runId), registry)
}

/** Folds events the store has beyond `fold` (after a cache hit or a snapshot). */
export async function catchUp(
  ctx: EngineContext,
  fold: RunFold,
  registry = ctx.registry,
): Promise<RunFold | null> {
  const runId = fold.state.runId
  const from = fold.state.lastSeq + 1
  const events = await ctx.store.read(runId, { fromSeq: from })
  if (events.length > 0 && events[0].seq !== from) {
    throw new DeterminismError(
      `run ${runId}: the log starts at seq ${events[0].seq} but the newest usable snapshot ends at ${from - 1}; events were trimmed without a covering snapshot`,
      { runId, head: events[0].seq, snapshotSeq: from - 1 },
    )
  }
  foldEvents(registry, runId, events, fold)
  return fold.state.lastSeq === 0 ? null : fold
}

/**
 * Saves a snapshot of `fold`. The store takes ownership of the data it is given, so a fold that
 * stays in use is copied first.
 */
export async function saveSnapshot(
  ctx: EngineContext,
  fold: RunFold,
  keepUsing: boolean,
): Promise<void> {
  const runId = fold.state.runId
  const seq = fold.state.lastSeq
  // Trimming happens only behind a snapshot that holds every projection the store can still
  // give: a fold that lacks one (a store that ran without trimming) rebuilds it first.
  if (ctx.trim) await holdProjections(ctx, fold)
  const data = (keepUsing ? cloneFold(fold) : fold) as unknown as Json
  await ctx.snapshots.save({
    runId,
    seq,
    createdAt: ctx.clock.now(),
    format: SNAPSHOT_FORMAT,
    data,
  })
  ctx.observe({ type: 'snapshot.saved', runId, seq })
  if (ctx.trim) await trimBehindSnapshots(ctx, runId)
}

/**
 * Whether a wake pass snapshots after its latest commit: at the first commit past each
 * `snapshotEvery` interval, and before an iteration that may hit the wake limit (that error
 * drops the fold, and the run then waits for an explicit call, as a parked one does).
 * Synchronous: it runs after every commit, and most passes never snapshot.
 */
export function snapshotDueInPass(
  ctx: EngineContext,
  mem: RunMemory,
  fold: RunFold,
  beforeLimit: boolean,
): boolean {
  const since = fold.state.lastSeq - mem.lastSnapshotSeq
  const every = ctx.options.snapshotEvery
  return since > 0 && (beforeLimit || (every > 0 && since >= every))
}

/**
 * A snapshot of a fold the pass keeps using. A failed save is observed and never fails the pass
 * (the log is the truth; a snapshot is a cache of it).
 */
export async function snapshotInPass(
  ctx: EngineContext,
  mem: RunMemory,
  fold: RunFold,
): Promise<void> {
  try {
    await saveSnapshot(ctx, fold, true)
    mem.lastSnapshotSeq = fold.state.lastSeq
  } catch (error) {
    ctx.observe({ type: 'snapshot.saved', runId: fold.state.runId, error: String(error) })
  }
}

/** Removes events covered by the oldest kept snapshot, and never past the coverage proof. */
async function trimBehindSnapshots(ctx: EngineContext, runId: string): Promise<void> {
  const trim = ctx.trim!
  const keep = Math.max(1, trim.keepSnapshots)
  await ctx.snapshots.prune(runId, keep)
  const kept = await ctx.snapshots.list(runId)
  if (kept.length === 0) return
  let through = kept[0]
  if (trim.coverage) {
    const covered = await trim.coverage(runId)
    const coveredSeq = typeof covered === 'number' ? covered : (covered?.throughSeq ?? 0)
    through = Math.min(through, coveredSeq)
  }
  if (through < 1) return
  const removed = await ctx.store.trim!(runId, through + 1)
  if (removed > 0) ctx.observe({ type: 'snapshot.trimmed', runId, throughSeq: through, removed })
}
