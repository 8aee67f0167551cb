import type { RunFold, WaitRecord } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { WaitUrlRecord } from '../core/ports.js'
import { RT } from '../core/runtime-events.js'
import type { EngineContext } from './context.js'
import type { RunWriter } from './run-writer.js'
import { validateSignalEvents } from './validate.js'
import { urlWaitOf } from './wait-urls.js'
import type { Seed } from './wake-pass.js'

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
  const value = await waitUrlValue(writer.ctx, wait, body)
  await writer.pass(fold, waitUrlSeed(wait, record.tokenId, value), 'input')
  return true
}

/** The body checked by the wait's input schema (when it names one): what satisfies the wait. */
export async function waitUrlValue(
  ctx: Pick<EngineContext, 'registry' | 'options'>,
  wait: WaitRecord,
  body: Json,
): Promise<Json> {
  const input = 'url' in wait.on ? wait.on.url.input : undefined
  if (input === undefined) return body
  const [checked] = await validateSignalEvents(
    ctx.registry,
    [{ type: input, payload: body }],
    ctx.options.maxEventBytes,
  )
  return (checked?.payload ?? null) as Json
}

/** Records the token id and satisfies the wait with `value`, in one batch. */
export function waitUrlSeed(wait: WaitRecord, tokenId: string, value: Json): Seed {
  return ({ batch }) => {
    const { waitId, threadId } = wait
    const done = batch.add(
      RT.waitUrlCompleted,
      { waitId, threadId, tokenId },
      { threadId, origin: 'external' },
    )
    batch.add(
      RT.waitSatisfied,
      { waitId, threadId, event: { seq: done.seq, type: done.type }, value },
      { threadId, causationId: done.id },
    )
  }
}
