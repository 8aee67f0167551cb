import type { WaitFor } from '../core/api-types.js'
import type { RunState } from '../core/envelope.js'
import { ResultTimeoutError } from '../core/errors.js'
import type { RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { WorkerCallbackInput } from '../core/ports.js'
import { type DeferredOperation, type InputDeferredPayload, RT } from '../core/runtime-events.js'
import type { EngineContext } from './context.js'
import {
  type DeferredRunState,
  deferredReason,
  deferredState,
  deferSignal,
  missingDefinition,
  recordDeferred,
  type UnfoldedQueue,
} from './deferred-inputs.js'
import type { CallerContext } from './engine-types.js'
import { cancelSeed, retryEffectSeed } from './operator-seeds.js'
import type { CheckedEvent } from './validate.js'
import { requireJson } from './validate.js'
import type { DeferWaitUrl } from './wait-url-complete.js'
import { waitUrlValue } from './wait-url-seed.js'
import { urlWaitOf } from './wait-urls.js'
import { callbackWrites, openAttempt } from './worker-callback.js'
import { releaseStuckAttemptSeed, type StuckAttemptAction } from './worker-operator.js'

/** How long `wait: 'settled'` waits for a host with the run's version to apply recorded input. */
export const DEFERRED_SETTLE_MS = 30_000
const SETTLE_POLL_MS = 20

/** What a host without a run's version uses of its engine (engine.ts). */
export interface ForeignRuns {
  readonly ctx: EngineContext
  controller(runId: string): UnfoldedQueue
  /** The run folded for reading (its runtime events, without its definition). */
  readFold(runId: string): Promise<RunFold>
  getRun(runId: string): Promise<RunState>
}

/**
 * `attempt`, or on a host that does not register the run's definition version, `action`
 * checked and recorded for a host that does (docs/deploys.md).
 */
export async function orDefer(
  host: ForeignRuns,
  runId: string,
  action: ForeignAction,
  caller: CallerContext,
  attempt: () => Promise<RunState>,
): Promise<RunState> {
  try {
    return await attempt()
  } catch (error) {
    const missing = missingDefinition(error)
    if (missing === undefined) throw error
    const fold = await host.readFold(runId)
    const read = () => host.getRun(runId)
    return deferAction(host.ctx, host.controller(runId), fold, action, caller, missing, read)
  }
}

/**
 * A signal for a run this host cannot execute: recorded (deferred-inputs.ts), then answered
 * with the run's state, once a host with the version applied it when `wait` is `'settled'`.
 */
export async function deferSignalOf(
  host: ForeignRuns,
  runId: string,
  events: readonly CheckedEvent[],
  request: { idempotencyKey?: string; identity?: Json; digest?: string },
  wait: WaitFor,
  missing: string,
): Promise<RunState> {
  const seq = await deferSignal(host.ctx, host.controller(runId), events, request, missing)
  const read = () => host.getRun(runId)
  if (wait === 'settled') return settleDeferred(host.ctx, runId, seq, missing, read)
  return deferredState(await read(), missing)
}

/** An operator action on a run whose definition version this host does not register. */
export type ForeignAction =
  | { type: 'wake' }
  | { type: 'cancel'; threadId?: string }
  | { type: 'retryEffect'; effectId: string }
  | { type: 'workerCallback'; callback: WorkerCallbackInput }
  | { type: 'releaseAttempt'; effectId: string; action: StuckAttemptAction }

/**
 * An operator action on a run this host cannot execute (docs/deploys.md): checked against the
 * run as this host reads it (the same checks a host with the version makes, so a wrong thread
 * or effect is refused here, nothing written), then recorded for a host with the version; a
 * wake only marks the run due. The run's state comes back with `executing: false`.
 */
export async function deferAction(
  ctx: EngineContext,
  controller: UnfoldedQueue,
  fold: RunFold,
  action: ForeignAction,
  caller: CallerContext,
  missing: string,
  read: () => Promise<RunState>,
): Promise<RunState> {
  const runId = fold.state.runId
  if (action.type === 'wake') {
    await controller.enqueueUnfolded('wake', async () => {
      if (ctx.capabilities.leases) await ctx.store.leases!.markDue(runId, ctx.clock.now())
      // The attempt that found the version missing took the run's lease: let go, so a host
      // with the version claims the run at once.
      await controller.writer.letGo()
    })
    return deferredState(await read(), missing)
  }
  // Nothing left to cancel: answered as a host with the version answers it.
  if (action.type === 'cancel' && !cancelSeed(fold, action.threadId)) return read()
  if (action.type === 'retryEffect') retryEffectSeed(runId, fold, action.effectId, caller)
  if (action.type === 'releaseAttempt') {
    releaseStuckAttemptSeed(runId, fold, action.effectId, action.action, caller)
  }
  if (action.type === 'workerCallback') {
    // A stale callback, or one that changes nothing, is ignored as a host with the version
    // ignores it. The callback must be JSON within the event size limit; a completion's
    // events are checked where it is applied.
    const effect = openAttempt(runId, fold, action.callback)
    if (!effect || !callbackWrites(effect, action.callback, ctx.clock.now())) return read()
    const max = ctx.options.maxEventBytes
    const callback = requireJson(action.callback, 'worker callback', max) as unknown
    const operation = { type: 'workerCallback', callback } as DeferredOperation
    await record(ctx, controller, operation, undefined, missing)
    return deferredState(await read(), missing)
  }
  await record(ctx, controller, action, caller.identity, missing)
  return deferredState(await read(), missing)
}

/**
 * A wait URL's POST for a run this host cannot execute (`completeByWaitUrl`'s fallback): the
 * wait must be open and the body pass its input schema (as on a host with the version), then
 * the completion is recorded for a host with the version. `completed` is false when the wait
 * is over; undefined when the run's queue failed for another reason.
 */
export function deferWaitUrl(host: ForeignRuns): DeferWaitUrl {
  return async (error, token, body) => {
    const missing = missingDefinition(error)
    if (missing === undefined) return undefined
    const reason = deferredReason(missing)
    const wait = urlWaitOf(await host.readFold(token.runId), token)
    if (!wait) return { completed: false, reason }
    const value = await waitUrlValue(host.ctx, wait, body)
    const { tokenId, threadId, waitKey } = token
    const operation = { type: 'waitUrl' as const, tokenId, threadId, waitKey, value }
    await record(host.ctx, host.controller(token.runId), operation, undefined, missing)
    return { completed: true, reason }
  }
}

function record(
  ctx: EngineContext,
  controller: UnfoldedQueue,
  operation: DeferredOperation,
  identity: Json | undefined,
  missing: string,
): Promise<number> {
  const payload: InputDeferredPayload = { events: [], operation, missing }
  if (identity !== undefined) payload.identity = identity
  return recordDeferred(ctx, controller, payload, undefined)
}

/**
 * `wait: 'settled'` on input recorded at `seq` for a host with the run's version: waits until
 * such a host applied it (`runtime.input.applied`) and let the run go (its lease released: the
 * work that input started has settled), then reads the run. Rejects with `RESULT_TIMEOUT` after
 * DEFERRED_SETTLE_MS; the input stays recorded and is applied when such a host claims the run.
 */
export async function settleDeferred(
  ctx: EngineContext,
  runId: string,
  seq: number,
  missing: string,
  read: () => Promise<RunState>,
): Promise<DeferredRunState> {
  const { clock, store } = ctx
  const until = clock.now() + DEFERRED_SETTLE_MS
  let from = seq + 1
  let applied = seq === 0
  for (;;) {
    if (!applied) {
      const events = await store.read(runId, { fromSeq: from })
      applied = events.some(
        (e) => e.type === RT.inputApplied && (e.payload as { seq?: unknown }).seq === seq,
      )
      if (events.length > 0) from = events[events.length - 1].seq + 1
    }
    if (applied && (await letGo(ctx, runId))) return deferredState(await read(), missing)
    if (clock.now() >= until) {
      throw new ResultTimeoutError(
        `run ${runId}: no host that registers ${missing} ${applied ? 'settled the run after applying' : 'applied'} the input recorded at seq ${seq} within ${DEFERRED_SETTLE_MS} ms; it stays recorded and is applied when such a host claims the run`,
        { runId, seq, missing, applied },
      )
    }
    await new Promise<void>((resolve) => clock.setTimeout(resolve, SETTLE_POLL_MS))
  }
}

/** Whether no host holds the run's lease now (nothing of it is running anywhere). */
async function letGo(ctx: EngineContext, runId: string): Promise<boolean> {
  if (!ctx.capabilities.leases) return true
  const lease = await ctx.store.leases!.readLease(runId)
  return !lease || lease.expiresAt <= ctx.clock.now()
}
