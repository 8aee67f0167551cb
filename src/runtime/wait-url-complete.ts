import type { RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { WaitUrlRecord } from '../core/ports.js'
import { RT } from '../core/runtime-events.js'
import type { RunWriter } from './run-writer.js'
import { validateSignalEvents } from './validate.js'
import { urlWaitOf } from './wait-urls.js'

/**
 * Completes the token's wait in the run's queue: the wait must still be open (a run's wait is
 * satisfied once, so two racing POSTs complete it once), the body passes the wait's input
 * schema, then one append records the token id and satisfies the wait with the body.
 */
export async function completeWaitOp(
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
