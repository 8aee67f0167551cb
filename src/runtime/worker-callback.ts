import { isTerminal } from '../core/envelope.js'
import { InvalidInputError, RunNotFoundError } from '../core/errors.js'
import type { EffectRecord, RunFold } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { WorkerCallbackInput, WorkerTask } from '../core/ports.js'
import { type EffectAttemptStartedPayload, RT } from '../core/runtime-events.js'
import { failAttempt } from './attempt-outcomes.js'
import type { EngineContext, Pass } from './context.js'
import { recordableError, requireJson, validateEmittedEvent } from './validate.js'
import type { Seed, SeedWriter } from './wake-pass.js'

const KINDS = new Set(['started', 'heartbeat', 'complete', 'fail', 'cancelled'])

type Prepared = { result: Json; events: Array<{ type: string; payload: Json }> }

/**
 * A worker reports on a dispatched attempt. Callbacks for a stale attempt, a finished effect,
 * an in-process effect or a finished run are ignored: nothing is written. A completion's
 * result and events are validated first (InvalidEventError / InvalidInputError, nothing
 * written) and then recorded atomically. `cancelled` counts only as the answer to a cancel
 * request; while one is pending, `complete` and `fail` settle it too (the outcome is known).
 */
export async function workerCallbackOp(
  writer: SeedWriter,
  fold: RunFold | null,
  input: WorkerCallbackInput,
): Promise<void> {
  const seed = await workerCallbackSeed(writer.ctx, writer.runId, fold, input)
  if (seed) await writer.pass(fold!, seed)
}

/**
 * What a worker's callback records, checked against `fold`; null when it changes nothing
 * (a stale attempt, a finished run). Also applied by a host with the run's version to a
 * callback another host recorded for it (deferred-inputs.ts).
 */
export async function workerCallbackSeed(
  ctx: EngineContext,
  runId: string,
  fold: RunFold | null,
  input: WorkerCallbackInput,
): Promise<Seed | null> {
  const effect = openAttempt(runId, fold, input)
  if (!effect) return null
  const prepared = input.kind === 'complete' ? await prepareCompletion(ctx, effect, input) : null
  if (!callbackWrites(effect, input, ctx.clock.now())) return null
  return (pass) => {
    // Checked again where it is recorded: input another host recorded for the run may have
    // settled the attempt in this pass first (the outcome is recorded once).
    const open = openAttempt(runId, pass.fold, input)
    if (open && callbackWrites(open, input, pass.now)) recordCallback(pass, open, input, prepared)
  }
}

/**
 * The effect whose current, open worker attempt a callback reports on (what a host without
 * the run's version checks too, docs/deploys.md); undefined when the callback is stale.
 */
export function openAttempt(
  runId: string,
  fold: RunFold | null,
  input: WorkerCallbackInput,
): EffectRecord | undefined {
  if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
  if (
    !input ||
    typeof input.effectId !== 'string' ||
    !Number.isInteger(input.attempt) ||
    !KINDS.has(input.kind)
  ) {
    throw new InvalidInputError(
      'worker callback needs { effectId, attempt (integer), kind: started|heartbeat|complete|fail|cancelled }',
    )
  }
  const effect = fold.effects[input.effectId]
  const current =
    effect !== undefined &&
    effect.execution === 'worker' &&
    effect.attempt === input.attempt &&
    (effect.status === 'dispatched' || effect.status === 'started')
  if (!current) return undefined
  // A finished run only takes the answer to a cancel request it made.
  if (isTerminal(fold.state.status) && !effect.cancelRequested) return undefined
  return effect
}

/**
 * Tasks a worker queue claimed for handing out (docs/workers.md, "Durable tasks"): each whose
 * attempt is still current and in a worker's hands is `ready`, and recorded `started` if it was
 * only dispatched (one pass for all of the run's tasks); the others are `stale` (the attempt
 * ended, was cancelled, or the run finished) and are dropped.
 */
export async function startClaimedOp(
  writer: SeedWriter,
  fold: RunFold | null,
  tasks: readonly WorkerTask[],
): Promise<{ ready: WorkerTask[]; stale: WorkerTask[] }> {
  const ready: WorkerTask[] = []
  const stale: WorkerTask[] = []
  const toStart: EffectRecord[] = []
  const finished = !fold || isTerminal(fold.state.status)
  for (const task of tasks) {
    const effect = fold?.effects[task.effectId]
    const current =
      !finished &&
      effect !== undefined &&
      effect.execution === 'worker' &&
      effect.attempt === task.attempt &&
      (effect.status === 'dispatched' || effect.status === 'started') &&
      !effect.cancelRequested
    if (!current) {
      stale.push(task)
      continue
    }
    ready.push(task)
    if (effect.status === 'dispatched') toStart.push(effect)
  }
  if (fold && toStart.length > 0) {
    await writer.pass(fold, (pass) => {
      for (const effect of toStart) {
        const { effectId, attempt } = effect
        recordCallback(pass, effect, { effectId, attempt, kind: 'started' }, null)
      }
    })
  }
  return { ready, stale }
}

/** Whether a callback for the current attempt changes anything (else nothing is written). */
export function callbackWrites(
  effect: EffectRecord,
  input: WorkerCallbackInput,
  now: number,
): boolean {
  switch (input.kind) {
    case 'started':
      return effect.status === 'dispatched' && !effect.cancelRequested
    case 'heartbeat':
      if (effect.cancelRequested) return false
      return effect.status === 'dispatched' || nextHeartbeat(effect, now) !== undefined
    case 'cancelled':
      return effect.cancelRequested === true
    default:
      return true
  }
}

/** The deadline a heartbeat at `now` sets: never past start-to-close. */
function nextHeartbeat(effect: EffectRecord, now: number): number | undefined {
  const every = effect.timeouts?.heartbeatMs
  if (!every) return undefined
  const at = now + every
  return effect.closeAt !== undefined && effect.closeAt < at ? effect.closeAt : at
}

/**
 * A completion's result and events. A worker is a separately authenticated executor of one
 * effect: its events are that effect's module's (local names resolve as in `ctx.emit`) or
 * application events, never another module's.
 */
async function prepareCompletion(
  ctx: EngineContext,
  effect: EffectRecord,
  input: WorkerCallbackInput,
): Promise<Prepared> {
  const max = ctx.options.maxEventBytes
  const result = requireJson(input.result ?? null, 'worker result', max)
  if (input.events !== undefined && !Array.isArray(input.events)) {
    throw new InvalidInputError('worker callback events must be an array of { type, payload? }')
  }
  const events: Prepared['events'] = []
  const emitter = ctx.registry.effectNamespaces.get(effect.type)
  for (const event of input.events ?? []) {
    const { type, payload } = event ?? {}
    events.push(
      await validateEmittedEvent(ctx.registry, emitter, type, payload ?? null, max, 'own-module'),
    )
  }
  return { result, events }
}

function recordCallback(
  pass: Pass,
  effect: EffectRecord,
  input: WorkerCallbackInput,
  prepared: Prepared | null,
): void {
  const { ctx, batch } = pass
  const { effectId, attempt } = effect
  const meta = { threadId: effect.threadId, effectId, origin: 'worker' as const }
  switch (input.kind) {
    case 'started':
    case 'heartbeat': {
      if (effect.status === 'dispatched') {
        // A heartbeat before `started` implies it: the worker is evidently running the task.
        const closeMs = effect.timeouts?.startToCloseMs
        const closeAt = closeMs ? pass.now + closeMs : undefined
        const beat = effect.timeouts?.heartbeatMs
        const beatAt = beat ? pass.now + beat : undefined
        const heartbeatFirst = beatAt !== undefined && (closeAt === undefined || beatAt < closeAt)
        const payload: EffectAttemptStartedPayload = {
          effectId,
          attempt,
          deadlineAt: (heartbeatFirst ? beatAt : closeAt) ?? null,
        }
        if (payload.deadlineAt !== null)
          payload.timeout = heartbeatFirst ? 'heartbeat' : 'start_to_close'
        if (closeAt !== undefined) payload.closeAt = closeAt
        batch.add(RT.effectAttemptStarted, payload, meta)
        return
      }
      const at = nextHeartbeat(effect, pass.now)
      if (at === undefined) return
      const timeout = at === effect.closeAt ? 'start_to_close' : 'heartbeat'
      batch.add(RT.effectHeartbeat, { effectId, attempt, deadlineAt: at, timeout }, meta)
      return
    }
    case 'complete': {
      const done = prepared as Prepared
      for (const event of done.events) batch.add(event.type, event.payload, meta)
      batch.add(RT.effectCompleted, { effectId, attempt, result: done.result }, meta)
      return
    }
    case 'fail': {
      const error = errorOf(input.error)
      if (effect.cancelRequested) {
        // The attempt ended without success after a cancel request: that answers it.
        const recorded = recordableError(error, ctx.options.maxEventBytes)
        const reason = recorded.message
        batch.add(RT.effectCancelled, { effectId, attempt, reason, error: recorded }, meta)
        return
      }
      // failAttempt makes the error recordable (cutting it twice would lose the count).
      failAttempt(pass, effect, attempt, error, input.retryable === false ? 'terminal' : 'error')
      return
    }
    case 'cancelled':
      batch.add(
        RT.effectCancelled,
        { effectId, attempt, reason: 'acknowledged by the worker' },
        meta,
      )
      return
  }
}

function errorOf(error: WorkerCallbackInput['error']): { code: string; message: string } {
  if (typeof error === 'string') return { code: 'WORKER_FAILED', message: error }
  const out: { code: string; message: string; details?: Json } = {
    code: typeof error?.code === 'string' ? error.code : 'WORKER_FAILED',
    message: typeof error?.message === 'string' ? error.message : 'the worker reported a failure',
  }
  if (error?.details !== undefined) out.details = error.details
  return out
}
