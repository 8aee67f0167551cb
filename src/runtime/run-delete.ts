import { isTerminal } from '../core/envelope.js'
import {
  InvalidRequestError,
  NotConfiguredError,
  RunNotFinishedError,
  RunNotFoundError,
  SeqConflictError,
} from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import type { DeletedRun } from '../core/ports.js'
import { FINISHED_STATUSES } from '../core/run-deletion.js'
import type { EngineContext } from './context.js'
import type { RunWriter } from './run-writer.js'

export interface DeleteRunOptions {
  /**
   * Deletes a run that has not finished too: its in-process attempts are aborted and whatever
   * it would still record is refused (docs/data-lifecycle.md). Default false: such a run is
   * refused with RUN_NOT_FINISHED; cancel it first.
   */
  force?: boolean
}

/** The options as given, or INVALID_REQUEST naming what is wrong (nothing is deleted). */
export function checkDeleteOptions(options: unknown): DeleteRunOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidRequestError('deleteRun options must be an object: { force? }')
  }
  const { force, ...rest } = options as DeleteRunOptions
  const unknown = Object.keys(rest)
  if (unknown.length > 0) {
    throw new InvalidRequestError(`deleteRun: unknown option ${unknown[0]} (known: force)`)
  }
  if (force !== undefined && typeof force !== 'boolean') {
    throw new InvalidRequestError('deleteRun: force must be true or false')
  }
  return { force }
}

/**
 * `deleteRun` in the run's queue: the run is checked against the fold, then the store deletes
 * it whole in one transaction (only if still finished, unless forced: a run another process
 * reopened meanwhile is read again and checked again), and this process forgets it.
 */
export async function deleteRunOp(
  ctx: EngineContext,
  writer: RunWriter,
  fold: RunFold | null,
  runId: string,
  force: boolean,
): Promise<DeletedRun> {
  if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
  const { status } = fold.state
  if (!force && !isTerminal(status)) {
    throw new RunNotFinishedError(
      `run ${runId} is ${status}: cancel it first, or delete it with force; nothing was deleted`,
      { runId, status },
    )
  }
  const store = ctx.store
  if (!ctx.capabilities.deleteRun || !store.deleteRun) {
    throw new NotConfiguredError(
      'this store cannot delete runs (memoryStore, sqliteStore and postgresStore can)',
    )
  }
  const deleted = await store.deleteRun(runId, {
    at: ctx.clock.now(),
    reason: 'request',
    statuses: force ? undefined : FINISHED_STATUSES,
  })
  if (!deleted) {
    throw new SeqConflictError(`run ${runId} changed while it was being deleted`, { runId })
  }
  await forgetDeletedRun(ctx, writer, runId)
  ctx.log.info({ runId, reason: 'request', tail: deleted.tail }, `run ${runId} deleted`)
  return deleted
}

/** What this process keeps of a deleted run goes: attempts, fold, deadline, separate snapshots. */
export async function forgetDeletedRun(
  ctx: EngineContext,
  writer: RunWriter | undefined,
  runId: string,
): Promise<void> {
  writer?.dropWork()
  writer?.discard()
  ctx.scheduler.cancel(runId)
  if (ctx.snapshots !== ctx.store.snapshots) await ctx.snapshots.prune(runId, 0)
}
