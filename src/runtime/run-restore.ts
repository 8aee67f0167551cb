import { checkArchivedRun } from '../core/archive-check.js'
import type { ArchivedRun, RestoredRun } from '../core/archive-types.js'
import { InvalidRequestError, StartConflictError } from '../core/errors.js'
import { emptyFold, foldEvents, type RunFold } from '../core/fold/index.js'
import { decodeEvent } from '../core/payload-codec.js'
import type { EngineContext } from './context.js'
import { metaOf } from './wake-pass.js'

/**
 * `restoreRun` in the run's queue (docs/data-lifecycle.md, "Restoring"): an archived run is
 * checked whole, folded (so a log this Skein cannot fold is refused before anything is
 * written), then appended as one batch with its own seqs, ids and times, and the meta the fold
 * gives. The store must not hold the run: the same run already there (same first event, same
 * tail) is a no-op, anything else START_CONFLICT with nothing written.
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
  if (run.head > 1) {
    throw new InvalidRequestError(
      `archived run ${runId} was trimmed (its log starts at seq ${run.head}): restoring a trimmed log is not supported; nothing was restored`,
      { runId, head: run.head },
    )
  }
  if (fold) {
    const [first] = await ctx.store.read(runId, { fromSeq: 1, limit: 1 })
    if (first?.id === events[0].id && fold.state.lastSeq === run.tail) {
      return { runId, tail: run.tail, status: fold.state.status, restored: false }
    }
    throw new StartConflictError(
      `run ${runId} is in the store already (tail ${fold.state.lastSeq}) and is not the archived run (tail ${run.tail}): delete it first; nothing was restored`,
      { runId, tail: fold.state.lastSeq, archivedTail: run.tail },
    )
  }
  const restored = emptyFold(runId)
  foldEvents(ctx.registry, runId, events, restored)
  await ctx.store.append(runId, events, { expectedSeq: 0, meta: metaOf(restored) })
  ctx.log.info({ runId, tail: run.tail }, `run ${runId} restored from its archive`)
  return { runId, tail: run.tail, status: restored.state.status, restored: true }
}
