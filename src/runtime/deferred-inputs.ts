import type { EventEnvelope, RunState } from '../core/envelope.js'
import {
  DeterminismError,
  IdempotencyConflictError,
  InvalidEventError,
  InvalidInputError,
  RunNotFoundError,
  toErrorInfo,
} from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import { type InputDeferredPayload, RT } from '../core/runtime-events.js'
import { acceptInputs } from './accept-inputs.js'
import type { EngineContext } from './context.js'
import type { CheckedEvent } from './validate.js'
import { validateSignalEvents } from './validate.js'
import type { PassOwner, Seed } from './wake-pass.js'

/**
 * What a signal resolves with on a host that does not register the run's definition version:
 * the input is recorded, a host that registers the version applies and executes it
 * (docs/deploys.md). The state is what this host can tell without folding the run.
 */
export type DeferredRunState = RunState & {
  executing: false
  /** Why this host did not execute the run, naming the version it lacks. */
  reason: string
}

/** The run's queue, as `deferSignal` uses it (run-controller.ts). */
export interface UnfoldedQueue {
  readonly runId: string
  readonly writer: PassOwner
  enqueueUnfolded<T>(name: string, run: () => Promise<T>): Promise<T>
}

/** The definition version a fold failed for lack of, when that is why it failed. */
export function missingDefinition(error: unknown): string | undefined {
  if (!DeterminismError.is(error)) return undefined
  const missing = (error.details as { missing?: unknown } | undefined)?.missing
  return typeof missing === 'string' ? missing : undefined
}

/**
 * Records a signal for a run this host cannot fold: one `runtime.input.deferred` event
 * appended at the run's tail, as the run's owner (so it never interleaves with the capable
 * host's commits), then the run marked due so a host that registers its version claims it and
 * applies the input. A retry with the same idempotency key is recorded once.
 */
export async function deferSignal(
  ctx: EngineContext,
  controller: UnfoldedQueue,
  events: readonly CheckedEvent[],
  request: { idempotencyKey?: string; identity?: Json; digest?: string },
  missing: string,
): Promise<DeferredRunState> {
  const { runId } = controller
  const payload: InputDeferredPayload = {
    events: events.map((e) =>
      e.threadId === undefined
        ? { type: e.type, payload: e.payload }
        : { type: e.type, payload: e.payload, threadId: e.threadId },
    ),
    missing,
  }
  if (request.identity !== undefined) payload.identity = request.identity
  if (request.digest !== undefined) payload.digest = request.digest
  const seq = await controller.enqueueUnfolded('signal', async () => {
    const tail = await ctx.store.tail(runId)
    if (tail === 0) throw new RunNotFoundError(`run ${runId} not found`, { runId })
    const now = ctx.clock.now()
    const event: EventEnvelope = {
      id: ctx.ids.eventId(),
      runId,
      seq: tail + 1,
      ts: now,
      type: RT.inputDeferred,
      payload: payload as unknown as Json,
      threadId: null,
      origin: 'external',
    }
    const key = request.idempotencyKey
    if (key !== undefined) event.idempotencyKey = key
    try {
      await controller.writer.append(
        [event],
        { expectedSeq: tail, idempotencyKey: key },
        true,
        null,
      )
    } catch (error) {
      // The same request reached a host before: recorded once (its body is compared by the
      // host that applies it).
      if (!IdempotencyConflictError.is(error)) throw error
      return tail
    }
    if (ctx.capabilities.leases) await ctx.store.leases!.markDue(runId, now)
    return tail + 1
  })
  const [first] = await ctx.store.read(runId, { fromSeq: 1, limit: 1 })
  const started =
    first?.type === RT.runStarted
      ? (first.payload as { kind: string; definitionName: string; definitionVersion: string })
      : undefined
  return {
    runId,
    status: 'running',
    rootThreadId: first?.threadId ?? '',
    kind: started?.kind ?? '',
    definitionName: started?.definitionName ?? '',
    definitionVersion: started?.definitionVersion ?? '',
    threads: {},
    lastSeq: seq,
    createdAt: first?.ts ?? 0,
    updatedAt: ctx.clock.now(),
    executing: false,
    reason: `this host does not register ${missing}: the input is recorded and a host that registers it executes the run`,
  }
}

/**
 * The seed of a pass that applies the input other hosts recorded for this run (oldest first):
 * each checked as a signal here would be (events, threads, module `accept` checks against the
 * run's waits), then recorded as external events, which match waits as any signal's do. Input
 * that fails its checks is marked refused with the reason, not applied. Undefined when none
 * waits.
 */
export function deferredInputsSeed(ctx: EngineContext, fold: RunFold): Seed | undefined {
  const pending = fold.deferredInputs
  if (!pending) return undefined
  const inputs = Object.entries(pending).sort(([a], [b]) => Number(a) - Number(b))
  if (inputs.length === 0) return undefined
  const maxBytes = ctx.options.maxEventBytes
  return async (pass) => {
    for (const [seqText, input] of inputs) {
      const seq = Number(seqText)
      let checked: CheckedEvent[]
      let payloads: Json[]
      try {
        checked = await validateSignalEvents(ctx.registry, input.events, maxBytes)
        for (const event of checked) {
          if (event.threadId !== undefined && !fold.state.threads[event.threadId])
            throw new InvalidEventError(`run ${fold.state.runId} has no thread ${event.threadId}`)
        }
        payloads = acceptInputs(fold, checked, input.identity, maxBytes)
      } catch (error) {
        if (!InvalidEventError.is(error) && !InvalidInputError.is(error)) throw error
        pass.batch.add(RT.inputApplied, { seq, refused: toErrorInfo(error) }, { threadId: null })
        continue
      }
      pass.batch.add(RT.inputApplied, { seq }, { threadId: null })
      checked.forEach((event, i) => {
        pass.batch.add(event.type, payloads[i], {
          threadId: event.threadId ?? null,
          origin: 'external',
        })
      })
    }
  }
}
