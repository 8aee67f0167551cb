import type { EventEnvelope } from '../core/envelope.js'
import { isTerminal } from '../core/envelope.js'
import { InvalidEventError } from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import { matchesWait } from '../core/matching.js'
import type { InputContext, InputWaiter } from '../core/module.js'
import type { CheckedEvent } from './validate.js'
import { requireJson } from './validate.js'

const refuse = (message: string, details?: Json): never => {
  throw new InvalidEventError(message, details)
}

/**
 * Runs the `accept` check of every module input in a signal against the run (in its queue,
 * before anything is written) and returns the payloads to record. Each check sees the open
 * waits its event would satisfy, less those an earlier event of the same signal satisfies.
 * A signal with no checked input costs nothing here.
 */
export function acceptInputs(
  fold: RunFold,
  events: readonly CheckedEvent[],
  identity: Json | undefined,
  maxBytes: number,
): Json[] {
  const payloads = events.map((event) => event.payload)
  if (!events.some((event) => event.input?.accept)) return payloads
  const claimed = new Set<string>()
  events.forEach((event, i) => {
    const accept = event.input?.accept
    if (accept) {
      const ctx: InputContext = {
        runId: fold.state.runId,
        threadId: event.threadId,
        identity,
        waiting: waitersOf(fold, event.type, event.payload, event.threadId, claimed),
        refuse,
      }
      payloads[i] = requireJson(
        accept(event.payload, ctx),
        `event ${event.type} payload`,
        maxBytes,
        InvalidEventError,
      )
    }
    for (const waiter of waitersOf(fold, event.type, payloads[i], event.threadId, claimed)) {
      claimed.add(waiter.waitId)
    }
  })
  return payloads
}

/** The open waits an external event would satisfy, as the writer's matching decides. */
function waitersOf(
  fold: RunFold,
  type: string,
  payload: Json,
  threadId: string | undefined,
  claimed: ReadonlySet<string>,
): InputWaiter[] {
  const out: InputWaiter[] = []
  if (isTerminal(fold.state.status)) return out
  const probe = { type, payload, threadId: threadId ?? null, origin: 'external' } as EventEnvelope
  for (const waitId in fold.waits) {
    const wait = fold.waits[waitId]
    if (claimed.has(waitId) || !matchesWait(wait, probe)) continue
    const thread = fold.state.threads[wait.threadId]
    if (!thread || isTerminal(thread.status)) continue
    const expect = 'event' in wait.on ? wait.on.event.expect : undefined
    out.push(
      expect === undefined
        ? { waitId, threadId: wait.threadId }
        : { waitId, threadId: wait.threadId, expect },
    )
  }
  return out
}
