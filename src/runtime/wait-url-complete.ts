import { WaitUrlGoneError, WaitUrlNotFoundError } from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { WaitUrlRecord } from '../core/ports.js'
import type { EngineContext } from './context.js'
import type { RunWriter } from './run-writer.js'
import { waitUrlSeed, waitUrlValue } from './wait-url-seed.js'
import { checkWaitUrl, urlWaitOf, type WaitUrlOutcome, type WaitUrlRequest } from './wait-urls.js'

/** What the completion does in the run's queue. */
export type InRunQueueOp = (fold: RunFold | null, writer: RunWriter) => Promise<void>

/** Runs `op` in the run's queue (the engine's mutation of the run). */
type InRunQueue = (runId: string, op: InRunQueueOp) => Promise<unknown>

/**
 * When the run's queue failed with `error`: on a host without the run's definition version,
 * the completion checked as this host reads the run and recorded for a host with the version
 * (deferred-operations.ts), with why this host did not complete it (`completed` false when the
 * wait is over); undefined for any other failure.
 */
export type DeferWaitUrl = (
  error: unknown,
  record: WaitUrlRecord,
  body: Json,
) => Promise<{ completed: boolean; reason: string } | undefined>

/**
 * A POST to a wait URL (docs/schedules.md, "Wait URLs"): the token is looked up by its hash
 * and checked, then its wait is completed in the run's queue. Anything refused writes nothing.
 * On a host that does not register the run's version the completion is recorded for one that
 * does, and the answer says `executing: false` (docs/deploys.md).
 */
export async function completeByWaitUrl(
  ctx: EngineContext,
  token: string,
  request: WaitUrlRequest,
  inRunQueue: InRunQueue,
  deferToCapable: DeferWaitUrl,
): Promise<WaitUrlOutcome> {
  const urls = ctx.waitUrls
  if (!urls) throw new WaitUrlNotFoundError('no wait URL has this token: nothing was written')
  const { record, repeat } = await checkWaitUrl(urls, token, request, ctx.clock.now())
  const outcome = { runId: record.runId, tokenId: record.tokenId }
  if (repeat) return { ...outcome, completed: false }
  let completed = false
  let deferred: { completed: boolean; reason: string } | undefined
  await inRunQueue(record.runId, async (fold, writer) => {
    completed = await completeWaitOp(writer, fold, record, request.body)
  }).catch(async (error: unknown) => {
    deferred = await deferToCapable(error, record, request.body)
    if (!deferred) throw error
    completed = deferred.completed
  })
  if (!completed) {
    throw new WaitUrlGoneError('the wait this URL completes is over: nothing was written', {
      tokenId: record.tokenId,
    })
  }
  await urls.store.use(record.hash, ctx.clock.now())
  if (!deferred) return { ...outcome, completed: true }
  return { ...outcome, completed: true, executing: false, reason: deferred.reason }
}

/**
 * Completes the token's wait in the run's queue: the wait must still be open (a run's wait is
 * satisfied once, so two racing POSTs complete it once), the body passes the wait's input
 * schema, then one append records the token id and satisfies the wait with the body.
 */
async function completeWaitOp(
  writer: RunWriter,
  fold: RunFold | null,
  record: WaitUrlRecord,
  body: Json,
): Promise<boolean> {
  const wait = fold ? urlWaitOf(fold, record) : undefined
  if (!fold || !wait) return false
  const value = await waitUrlValue(writer.ctx, wait, body)
  await writer.pass(fold, waitUrlSeed(wait, record.tokenId, value), 'input')
  return true
}
