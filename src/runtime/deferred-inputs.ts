import type { EventEnvelope, RunState } from '../core/envelope.js'
import {
  DeterminismError,
  IdempotencyConflictError,
  InvalidEventError,
  RunNotFoundError,
  SkeinError,
  toErrorInfo,
  WaitUrlGoneError,
} from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import { type InputDeferredPayload, RT } from '../core/runtime-events.js'
import { acceptInputs } from './accept-inputs.js'
import type { EngineContext } from './context.js'
import { cancelSeed, retryEffectSeed } from './operator-seeds.js'
import type { CheckedEvent } from './validate.js'
import { validateSignalEvents } from './validate.js'
import { waitUrlSeed } from './wait-url-seed.js'
import { urlWaitOf } from './wait-urls.js'
import type { PassOwner, Seed } from './wake-pass.js'
import { workerCallbackSeed } from './worker-callback.js'
import { releaseStuckAttemptSeed } from './worker-operator.js'

/**
 * What a call resolves with on a host that does not register the run's definition version:
 * the input is recorded, a host that registers the version applies and executes it
 * (docs/deploys.md). The state is the run's as this host reads it.
 */
export type DeferredRunState = RunState & {
  executing: false
  /** Why this host did not execute the run, naming the version it lacks. */
  reason: string
}

/** The run's queue, as `recordDeferred` uses it (run-controller.ts). */
export interface UnfoldedQueue {
  readonly runId: string
  readonly writer: PassOwner & { letGo(): Promise<void> | undefined }
  enqueueUnfolded<T>(name: string, run: () => Promise<T>): Promise<T>
}

/** The definition version a fold failed for lack of, when that is why it failed. */
export function missingDefinition(error: unknown): string | undefined {
  if (!DeterminismError.is(error)) return undefined
  const missing = (error.details as { missing?: unknown } | undefined)?.missing
  return typeof missing === 'string' ? missing : undefined
}

/**
 * Records a signal for a run this host cannot execute (deferred-operations.ts has the other
 * inputs): one `runtime.input.deferred` event, then the run marked due so a host that
 * registers its version claims it and applies the input. A retry with the same idempotency
 * key is recorded once. Resolves with the seq of the recorded input.
 */
export function deferSignal(
  ctx: EngineContext,
  controller: UnfoldedQueue,
  events: readonly CheckedEvent[],
  request: { idempotencyKey?: string; identity?: Json; digest?: string },
  missing: string,
): Promise<number> {
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
  return recordDeferred(ctx, controller, payload, request.idempotencyKey)
}

/**
 * Appends `payload` as one `runtime.input.deferred` at the run's tail, as the run's owner (so
 * it never interleaves with the capable host's commits), then marks the run due. Resolves with
 * its seq, or the seq of the input recorded before under the same idempotency key.
 */
export function recordDeferred(
  ctx: EngineContext,
  controller: UnfoldedQueue,
  payload: InputDeferredPayload,
  idempotencyKey: string | undefined,
): Promise<number> {
  const { runId } = controller
  return controller.enqueueUnfolded('defer', async () => {
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
    if (idempotencyKey !== undefined) event.idempotencyKey = idempotencyKey
    try {
      await controller.writer.append([event], { expectedSeq: tail, idempotencyKey }, true, null)
    } catch (error) {
      // The same request reached a host before: recorded once (its body is compared by the
      // host that applies it).
      if (!IdempotencyConflictError.is(error)) throw error
      return recordedSeq(ctx, runId, idempotencyKey!)
    }
    if (ctx.capabilities.leases) await ctx.store.leases!.markDue(runId, now)
    return tail + 1
  })
}

/**
 * The seq of the input recorded before under `key`: 0 when a host with the version received it
 * directly (nothing of it waits to be applied).
 */
async function recordedSeq(ctx: EngineContext, runId: string, key: string): Promise<number> {
  const events = await ctx.store.read(runId, { fromSeq: 1 })
  const recorded = events.find((e) => e.type === RT.inputDeferred && e.idempotencyKey === key)
  return recorded?.seq ?? 0
}

/** The run's state as a host without its version answers it: not executing here, and why. */
export function deferredState(state: RunState, missing: string): DeferredRunState {
  // A stranded run's reason says so (fleet-presence.ts), and that its input is recorded.
  return {
    ...state,
    executing: false,
    reason: state.stranded ? state.reason! : deferredReason(missing),
  }
}

/** Why a host did not execute a run it recorded input for. */
export function deferredReason(missing: string): string {
  return `this host does not register ${missing}: the input is recorded and a host that registers it executes the run`
}

/**
 * The seed of a pass that applies the input other hosts recorded for this run (oldest first):
 * each checked as this host checks its own calls (a signal's events, threads and module
 * `accept` checks against the run's waits; a cancel's thread; a retried effect's state; a wait
 * URL's wait), then recorded as they would be: a signal's events match waits as any signal's
 * do. Input that fails its checks is marked refused with the reason, not applied. Undefined
 * when none waits.
 */
export function deferredInputsSeed(ctx: EngineContext, fold: RunFold): Seed | undefined {
  const pending = fold.deferredInputs
  if (!pending) return undefined
  const inputs = Object.entries(pending).sort(([a], [b]) => Number(a) - Number(b))
  if (inputs.length === 0) return undefined
  return async (pass) => {
    for (const [seqText, input] of inputs) {
      const seq = Number(seqText)
      let apply: Seed | null
      try {
        apply = await applicationOf(ctx, fold, input)
      } catch (error) {
        if (!(error instanceof SkeinError) || !REFUSALS.has(error.code)) throw error
        pass.batch.add(RT.inputApplied, { seq, refused: toErrorInfo(error) }, { threadId: null })
        continue
      }
      pass.batch.add(RT.inputApplied, { seq }, { threadId: null })
      await apply?.(pass)
    }
  }
}

/** What a caller's input can be refused for where it is applied (it is then not applied). */
const REFUSALS = new Set([
  'INVALID_EVENT',
  'INVALID_INPUT',
  'EFFECT_NOT_FOUND',
  'EFFECT_NOT_RETRYABLE',
  'WAIT_URL_GONE',
])

/** One deferred input checked against the run as it is now: what recording it adds. */
async function applicationOf(
  ctx: EngineContext,
  fold: RunFold,
  input: InputDeferredPayload,
): Promise<Seed | null> {
  const operation = input.operation
  if (operation?.type === 'cancel') return cancelSeed(fold, operation.threadId)
  if (operation?.type === 'retryEffect') {
    const caller = input.identity === undefined ? {} : { identity: input.identity }
    return retryEffectSeed(fold.state.runId, fold, operation.effectId, caller)
  }
  if (operation?.type === 'workerCallback') {
    return workerCallbackSeed(ctx, fold.state.runId, fold, operation.callback)
  }
  if (operation?.type === 'releaseAttempt') {
    const caller = input.identity === undefined ? {} : { identity: input.identity }
    const { effectId, action } = operation
    return releaseStuckAttemptSeed(fold.state.runId, fold, effectId, action, caller)
  }
  if (operation?.type === 'waitUrl') {
    const wait = urlWaitOf(fold, operation)
    if (!wait) throw new WaitUrlGoneError('the wait this URL completes is over')
    return waitUrlSeed(wait, operation.tokenId, operation.value)
  }
  const checked = await validateSignalEvents(ctx.registry, input.events, ctx.options.maxEventBytes)
  for (const event of checked) {
    if (event.threadId !== undefined && !fold.state.threads[event.threadId])
      throw new InvalidEventError(`run ${fold.state.runId} has no thread ${event.threadId}`)
  }
  const payloads = acceptInputs(fold, checked, input.identity, ctx.options.maxEventBytes)
  return (pass) => {
    checked.forEach((event, i) => {
      pass.batch.add(event.type, payloads[i], {
        threadId: event.threadId ?? null,
        origin: 'external',
      })
    })
  }
}
