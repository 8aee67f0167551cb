import { checkArchivedRun } from '../core/archive-check.js'
import type { ArchivedRun, RestoredRun } from '../core/archive-types.js'
import type { EventEnvelope } from '../core/envelope.js'
import { InvalidRequestError, SkeinError, StartConflictError } from '../core/errors.js'
import { emptyFold, foldEvents, foldFromSnapshot, type RunFold } from '../core/fold/index.js'
import { decodeEvent } from '../core/payload-codec.js'
import type { Snapshot } from '../core/ports.js'
import { snapshotContext } from './codec-store.js'
import type { EngineContext } from './context.js'
import { metaOf } from './wake-pass.js'

/**
 * `restoreRun` in the run's queue (docs/data-lifecycle.md, "Restoring"): an archived run is
 * checked whole, folded (so a log this Skein cannot fold is refused before anything is
 * written), then written with its own seqs, ids and times, and the meta the fold gives: a whole
 * log as one append, a log trimmed behind a snapshot (`head > 1`) with that snapshot in one
 * transaction (`restoreTrimmed`). The store must not hold the run: the same run already there
 * (same first event, same tail) is a no-op, anything else START_CONFLICT with nothing written.
 */
export async function restoreRunOp(
  ctx: EngineContext,
  fold: RunFold | null,
  archived: ArchivedRun,
): Promise<RestoredRun> {
  const run = checkArchivedRun(archived, `archived run ${String(archived?.runId)}`)
  const { runId } = run
  // An archive holds payloads as the store did (encoded by the codec): the fold reads them decoded.
  const codec = ctx.codec
  const events = codec ? run.events.map((e) => decodeEvent(codec, e)) : run.events
  const snapshot = run.head > 1 ? trimmedSnapshot(ctx, run) : null
  if (fold) {
    if (fold.state.lastSeq === run.tail && (await sameRun(ctx, run, events))) {
      // A restore cut short between the log and its keys is finished by restoring it again.
      await restoreKeys(ctx, run)
      return { runId, tail: run.tail, status: fold.state.status, restored: false }
    }
    throw new StartConflictError(
      `run ${runId} is in the store already (tail ${fold.state.lastSeq}) and is not the archived run (tail ${run.tail}): delete it first; nothing was restored`,
      { runId, tail: fold.state.lastSeq, archivedTail: run.tail },
    )
  }
  const restored = snapshot ? foldFromSnapshot(snapshot)! : emptyFold(runId)
  foldEvents(ctx.registry, runId, events, restored)
  if (snapshot) {
    await ctx.store.restoreTrimmed!(runId, {
      snapshot,
      events,
      meta: metaOf(restored),
      attributes: restored.state.attributes,
    })
  } else {
    await ctx.store.append(runId, events, { expectedSeq: 0, meta: metaOf(restored) })
  }
  await restoreKeys(ctx, run)
  ctx.log.info({ runId, head: run.head, tail: run.tail }, `run ${runId} restored from its archive`)
  return { runId, tail: run.tail, status: restored.state.status, restored: true }
}

/**
 * The snapshot a trimmed archive carries, decoded, once this engine can write it back with the
 * log in one transaction and read it; otherwise INVALID_REQUEST, nothing written.
 */
function trimmedSnapshot(ctx: EngineContext, run: ArchivedRun): Snapshot {
  const { runId, head } = run
  const refuse = (why: string): never => {
    throw new InvalidRequestError(
      `archived run ${runId} was trimmed (its log starts at seq ${head}): ${why}; nothing was restored`,
      { runId, head },
    )
  }
  if (!ctx.capabilities.restoreTrimmed || !ctx.snapshotsInStore) {
    refuse(
      "this engine's store cannot write a trimmed log back with its snapshot (memoryStore, sqliteStore and postgresStore can, with their own snapshots)",
    )
  }
  const stored = run.snapshot!
  const codec = ctx.codec
  const snapshot = codec?.encoded(stored.data)
    ? { ...stored, data: codec.decode(stored.data, snapshotContext(stored)) }
    : stored
  if (snapshot.runId !== runId) refuse(`its snapshot is of run ${snapshot.runId}`)
  // The fold starts from it: a format this Skein cannot read cannot be checked by a fold.
  let fold: RunFold | null = null
  try {
    fold = foldFromSnapshot(snapshot)
  } catch (error) {
    if (SkeinError.is(error)) throw error
    refuse(`its snapshot at seq ${snapshot.seq} is not a run's fold (${String(error)})`)
  }
  if (!fold) refuse(`its snapshot has format ${snapshot.format}, which this Skein does not read`)
  if (fold?.state?.lastSeq !== snapshot.seq) {
    refuse(`its snapshot at seq ${snapshot.seq} does not hold a fold through that seq`)
  }
  return snapshot
}

/**
 * The run's recorded append keys back in the store (format 2), after its log: another process's
 * retry of an append the original took is refused again. A store without the capability, or an
 * archive without keys (format 1, a JetStream archive), restores as before: the fold's own keys
 * come back with the events either way.
 */
async function restoreKeys(ctx: EngineContext, run: ArchivedRun): Promise<void> {
  if (!run.keys?.length || !ctx.capabilities.idempotencyKeys) return
  await ctx.store.idempotencyKeys!.restore(run.runId, run.keys)
}

/**
 * Whether the store's run of this id is the archived one: the same first event held, or, for a
 * log trimmed to nothing, the same snapshot at its tail (seq and time).
 */
async function sameRun(ctx: EngineContext, run: ArchivedRun, events: EventEnvelope[]) {
  if (events.length > 0) {
    const [first] = await ctx.store.read(run.runId, { fromSeq: events[0].seq, limit: 1 })
    return first?.id === events[0].id
  }
  const held = await ctx.snapshots.latest(run.runId, run.tail)
  return held?.seq === run.snapshot?.seq && held?.createdAt === run.snapshot?.createdAt
}
