import { WaitUrlGoneError, WaitUrlNotFoundError } from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { WaitUrlRecord } from '../core/ports.js'
import { RT } from '../core/runtime-events.js'
import type { EngineContext } from './context.js'
import type { RunWriter } from './run-writer.js'
import { validateSignalEvents } from './validate.js'
import { checkWaitUrl, urlWaitOf, type WaitUrlOutcome, type WaitUrlRequest } from './wait-urls.js'

/** Runs `op` in the run's queue (the engine's mutation of the run). */
type InRunQueue = (
  runId: string,
  op: (fold: RunFold | null, writer: RunWriter) => Promise<void>,
) => Promise<unknown>

/**
 * A POST to a wait URL (docs/schedules.md, "Wait URLs"): the token is looked up by its hash
 * and checked, then its wait is completed in the run's queue. Anything refused writes nothing.
 */
export async function completeByWaitUrl(
  ctx: EngineContext,
  token: string,
  request: WaitUrlRequest,
  inRunQueue: InRunQueue,
): Promise<WaitUrlOutcome> {
  const urls = ctx.waitUrls
  if (!urls) throw new WaitUrlNotFoundError('no wait URL has this token: nothing was written')
  const { record, repeat } = await checkWaitUrl(urls, token, request, ctx.clock.now())
  const outcome = { runId: record.runId, tokenId: record.tokenId }
  if (repeat) return { ...outcome, completed: false }
  let completed = false
  await inRunQueue(record.runId, async (fold, writer) => {
    completed = await completeWaitOp(writer, fold, record, request.body)
  })
  if (!completed) {
    throw new WaitUrlGoneError('the wait this URL completes is over: nothing was written', {
      tokenId: record.tokenId,
    })
  }
  await urls.store.use(record.hash, ctx.clock.now())
  return { ...outcome, completed: true }
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
  const { ctx } = writer
  const input = 'url' in wait.on ? wait.on.url.input : undefined
  let value = body
  if (input !== undefined) {
    const [checked] = await validateSignalEvents(
      ctx.registry,
      [{ type: input, payload: body }],
      ctx.options.maxEventBytes,
    )
    value = (checked?.payload ?? null) as Json
  }
  await writer.pass(
    fold,
    ({ batch }) => {
      const { waitId, threadId } = wait
      const done = batch.add(
        RT.waitUrlCompleted,
        { waitId, threadId, tokenId: record.tokenId },
        { threadId, origin: 'external' },
      )
      batch.add(
        RT.waitSatisfied,
        { waitId, threadId, event: { seq: done.seq, type: done.type }, value },
        { threadId, causationId: done.id },
      )
    },
    'input',
  )
  return true
}
