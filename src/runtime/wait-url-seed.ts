import type { WaitRecord } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import { RT } from '../core/runtime-events.js'
import type { EngineContext } from './context.js'
import { validateSignalEvents } from './validate.js'
import type { Seed } from './wake-pass.js'

// What completing a wait through its URL records: by the host that executes the run
// (wait-url-complete.ts), and checked by a host without the run's version before it records
// the completion for one with it (deferred-operations.ts, docs/deploys.md).

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
