import type { ArchiveSink } from '../core/archive-types.js'
import type { RunStatus } from '../core/envelope.js'
import { InvalidRequestError } from '../core/errors.js'
import type { DeletedRun, EventStore } from '../core/ports.js'
import type { RetentionOptions, RetentionStatus, RetentionSweep } from '../core/retention-types.js'
import { FINISHED_STATUSES } from '../core/run-deletion.js'
import { archiveBatch } from './archive-batch.js'
import type { EngineContext } from './context.js'
import { errorFields } from './logger.js'
import type { ClaimedRound, ClaimedTask } from './ownership/claimed-task.js'

export interface ResolvedRetention {
  finishedAfterMs: number
  statuses: readonly RunStatus[]
  batchSize: number
  intervalMs: number
  archive?: ArchiveSink
}

const positiveInteger = (value: unknown, name: string, max = Number.MAX_SAFE_INTEGER): number => {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > max) {
    throw new InvalidRequestError(
      `createEngine: retention.${name} must be a whole number of ${name === 'batchSize' ? 'runs' : 'ms'} from 1 to ${max} (got ${JSON.stringify(value)})`,
    )
  }
  return value
}

/** The options checked once, when the engine is created (nothing runs with a bad one). */
export function resolveRetention(options: unknown): ResolvedRetention | undefined {
  if (options === undefined) return undefined
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidRequestError('createEngine: retention must be an object: { finishedAfterMs }')
  }
  const { finishedAfterMs, statuses, batchSize, intervalMs, archive, ...rest } =
    options as RetentionOptions
  const unknown = Object.keys(rest)
  if (unknown.length > 0) {
    throw new InvalidRequestError(
      `createEngine: unknown retention option ${unknown[0]} (known: finishedAfterMs, statuses, batchSize, intervalMs, archive)`,
    )
  }
  if (
    archive !== undefined &&
    (archive === null ||
      typeof archive !== 'object' ||
      typeof archive.write !== 'function' ||
      typeof archive.name !== 'string')
  ) {
    throw new InvalidRequestError(
      'createEngine: retention.archive must be an archive sink ({ name, write }), e.g. jsonlArchive({ dir })',
    )
  }
  const wanted = statuses ?? FINISHED_STATUSES
  if (
    !Array.isArray(wanted) ||
    wanted.length === 0 ||
    wanted.some((s) => !FINISHED_STATUSES.includes(s))
  ) {
    throw new InvalidRequestError(
      `createEngine: retention.statuses must list finished statuses (${FINISHED_STATUSES.join(', ')})`,
    )
  }
  return {
    finishedAfterMs: positiveInteger(finishedAfterMs, 'finishedAfterMs'),
    statuses: [...new Set(wanted)],
    batchSize: positiveInteger(batchSize ?? 500, 'batchSize', 10_000),
    intervalMs: positiveInteger(intervalMs ?? 60_000, 'intervalMs'),
    archive,
  }
}

/** A turn of the event loop between batches: live traffic goes first. */
const yieldToOthers = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * The retention sweep: under the claim `sweep:retention` (one process at a time across the
 * store's hosts), deletes finished runs older than the limit, `batchSize` per transaction,
 * until a batch comes back short, the claim is lost or the engine stops. Each deleted run is
 * forgotten by this process (`forget`); other processes drop their cached folds when they read
 * the run's tail. Logged per sweep, observed per batch.
 */
export class RetentionSweeper {
  private task: ClaimedTask | undefined
  private deletedTotal = 0
  private archivedTotal = 0
  private last: RetentionSweep | null = null

  constructor(
    private readonly ctx: EngineContext,
    private readonly options: ResolvedRetention,
    private readonly forget: (runId: string) => Promise<void>,
  ) {}

  /** Starts the sweep; refused (the boot fails) on a store that cannot delete or claim. */
  start(store: EventStore): void {
    const { capabilities } = this.ctx
    if (!capabilities.deleteFinished || !capabilities.claims || !store.deleteFinished) {
      throw new TypeError(
        'createEngine: retention needs a store that deletes runs and holds claims (memoryStore, sqliteStore, postgresStore)',
      )
    }
    if (this.options.archive && (!capabilities.summaries || !store.listSummaries)) {
      throw new TypeError(
        'createEngine: retention.archive needs a store that lists run summaries (memoryStore, sqliteStore, postgresStore)',
      )
    }
    this.task = this.ctx.tasks.start({
      name: 'sweep:retention',
      intervalMs: this.options.intervalMs,
      leaseMs: Math.max(10_000, 3 * this.options.intervalMs),
      work: (round) => this.sweep(round),
    })
  }

  status(): RetentionStatus {
    const { finishedAfterMs, statuses, batchSize, intervalMs, archive } = this.options
    return {
      enabled: true,
      finishedAfterMs,
      statuses,
      batchSize,
      intervalMs,
      holding: this.task?.holding ?? false,
      deletedTotal: this.deletedTotal,
      ...(archive && { archive: archive.name, archivedTotal: this.archivedTotal }),
      lastSweep: this.last && { ...this.last },
    }
  }

  private async sweep(round: ClaimedRound): Promise<void> {
    const { ctx, options } = this
    const deleteFinished = ctx.store.deleteFinished?.bind(ctx.store)
    if (!deleteFinished) return
    const startedAt = ctx.clock.now()
    const cutoff = startedAt - options.finishedAfterMs
    const sweep: RetentionSweep = { startedAt, finishedAt: null, cutoff, deleted: 0, batches: 0 }
    const { archive } = options
    if (archive) Object.assign(sweep, { archived: 0, kept: 0 })
    this.last = sweep
    // Archiving: the page after the last, so runs a batch kept do not hold the sweep back.
    let cursor: string | undefined
    try {
      for (;;) {
        if (!round.held()) throw new Error('the claim sweep:retention was lost or the engine stops')
        let deleted: DeletedRun[]
        let more: boolean
        let archived = 0
        if (archive) {
          const batch = await archiveBatch(ctx, archive, {
            statuses: options.statuses,
            updatedBefore: cutoff,
            limit: options.batchSize,
            cursor,
          })
          deleted = batch.deleted
          archived = batch.archived
          sweep.archived = (sweep.archived ?? 0) + batch.archived
          sweep.kept = (sweep.kept ?? 0) + batch.kept.length
          this.archivedTotal += batch.archived
          for (const { runId, why } of batch.kept) {
            ctx.log.warn({ runId, why }, `retention kept run ${runId}: ${why}`)
          }
          cursor = batch.nextCursor ?? undefined
          more = batch.nextCursor !== null
        } else {
          deleted = await deleteFinished({
            statuses: options.statuses,
            updatedBefore: cutoff,
            limit: options.batchSize,
            at: ctx.clock.now(),
            reason: 'retention',
          })
          more = deleted.length === options.batchSize
        }
        for (const run of deleted) await this.forget(run.runId)
        sweep.batches++
        sweep.deleted += deleted.length
        this.deletedTotal += deleted.length
        ctx.observe({
          type: 'retention.batch',
          runId: '',
          deleted: deleted.length,
          cutoff,
          ...(archive && { archived }),
        })
        if (!more) break
        await yieldToOthers()
      }
    } catch (error) {
      sweep.error = errorFields(error).message
      ctx.log.error({ ...sweep }, `retention sweep stopped early: ${sweep.error}`)
    } finally {
      sweep.finishedAt = ctx.clock.now()
    }
    if (sweep.error === undefined && sweep.deleted > 0) {
      ctx.log.info(
        { ...sweep },
        `retention sweep deleted ${sweep.deleted} run(s) finished before ${new Date(cutoff).toISOString()}`,
      )
    }
  }
}
