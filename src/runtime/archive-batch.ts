import { checkArchivedRun } from '../core/archive-check.js'
import { ARCHIVE_FORMAT, type ArchivedRun, type ArchiveSink } from '../core/archive-types.js'
import type { RunStatus } from '../core/envelope.js'
import { encodeEvent } from '../core/payload-codec.js'
import type { DeletedRun } from '../core/ports.js'
import type { EngineContext } from './context.js'

/** Runs of a batch read from the store at once. */
const READ_CONCURRENCY = 8

export interface ArchiveBatchQuery {
  statuses: readonly RunStatus[]
  updatedBefore: number
  limit: number
  /** Where the previous batch of this sweep ended (the runs it kept are behind it). */
  cursor?: string
}

export interface ArchiveBatchResult {
  /** Where the next batch starts; null when this page was the last. */
  nextCursor: string | null
  archived: number
  deleted: DeletedRun[]
  /** Runs left in the store: one that cannot be archived whole, or changed after archiving. */
  kept: Array<{ runId: string; why: string }>
}

/** Reads one run whole as the store holds it, or says why it cannot be archived. */
async function readRun(
  ctx: EngineContext,
  runId: string,
  at: number,
): Promise<ArchivedRun | string> {
  const { head, tail } = await ctx.store.bounds(runId)
  if (tail === 0) return 'gone'
  const read = await ctx.store.read(runId, { fromSeq: head })
  const stored = head > 1 ? await ctx.snapshots.latest(runId, head - 1) : null
  // The archive holds what the store holds: payloads encoded with the engine's codec.
  const codec = ctx.codec
  const events = codec ? read.map((e) => encodeEvent(codec, e)) : read
  const snapshot =
    codec && stored
      ? {
          ...stored,
          data: codec.encode(stored.data, {
            part: 'snapshot',
            runId,
            id: String(stored.seq),
          }),
        }
      : stored
  const last = events.at(-1)
  const keys = ctx.capabilities.idempotencyKeys ? await ctx.store.idempotencyKeys!.list(runId) : []
  const run = {
    format: ARCHIVE_FORMAT,
    runId,
    head,
    // A log trimmed to nothing holds no event: its tail is the store's (its snapshot's seq).
    tail: last?.seq ?? tail,
    status: null,
    kind: null,
    definitionName: null,
    archivedAt: at,
    events,
    snapshot,
    keys,
  }
  try {
    return checkArchivedRun(run, `run ${runId}`)
  } catch (error) {
    return (error as Error).message
  }
}

/**
 * One batch of an archiving retention sweep (docs/data-lifecycle.md, "Archives"): the oldest
 * finished runs past the limit are read whole, written to the sink (which resolves only once
 * they are durable there), and only then deleted, each only while its tail is still the one
 * archived and its status one of `statuses` (checked in the deleting transaction). A crash
 * between the two leaves the runs in the store; the next sweep archives them again, and the
 * sink stores them once. A run kept is left behind the batch's cursor, so the sweep goes on
 * past it to younger runs instead of listing it again (the next sweep looks at it again).
 */
export async function archiveBatch(
  ctx: EngineContext,
  sink: ArchiveSink,
  query: ArchiveBatchQuery,
): Promise<ArchiveBatchResult> {
  const { store } = ctx
  const page = await store.listSummaries!({
    status: query.statuses,
    updatedBefore: query.updatedBefore,
    order: 'oldest',
    limit: query.limit,
    ...(query.cursor !== undefined && { cursor: query.cursor }),
  })
  const at = ctx.clock.now()
  const runs: ArchivedRun[] = []
  const kept: ArchiveBatchResult['kept'] = []
  // A few runs read at once (each read is a round trip or three on Postgres), in page order.
  const read: Array<ArchivedRun | string> = []
  let next = 0
  const reader = async () => {
    while (next < page.runs.length) {
      const i = next++
      read[i] = await readRun(ctx, page.runs[i].runId, at)
    }
  }
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, page.runs.length) }, reader))
  for (const [i, summary] of page.runs.entries()) {
    const run = read[i]
    if (typeof run === 'string') {
      if (run !== 'gone') kept.push({ runId: summary.runId, why: run })
      continue
    }
    if (run.events.length === 0 && sink.emptyLogs !== true) {
      kept.push({
        runId: summary.runId,
        why: `its log is trimmed to nothing (a snapshot at ${run.tail}), which sink ${sink.name} does not store`,
      })
      continue
    }
    runs.push({
      ...run,
      status: summary.status,
      kind: summary.kind,
      definitionName: summary.definitionName,
    })
  }
  if (runs.length > 0) await sink.write(runs)
  const deleted =
    runs.length === 0
      ? []
      : await store.deleteFinished!({
          statuses: query.statuses,
          updatedBefore: query.updatedBefore,
          limit: runs.length,
          at: ctx.clock.now(),
          reason: 'retention',
          runs: runs.map(({ runId, tail }) => ({ runId, tail })),
        })
  const gone = new Set(deleted.map((d) => d.runId))
  for (const run of runs) {
    if (!gone.has(run.runId)) kept.push({ runId: run.runId, why: 'changed after it was archived' })
  }
  return { nextCursor: page.nextCursor, archived: runs.length, deleted, kept }
}
