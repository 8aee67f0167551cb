// Admission of local attempts of effects that declare `concurrency` or `rate`
// (docs/flow-control.md, "Effects"): a pass asks before it records an attempt's start. The
// counting is EffectLimits' (effect-limits.ts); this file is the pass's side of it.
import { isTerminal } from '../core/envelope.js'
import { toErrorInfo } from '../core/errors.js'
import type { EffectRecord } from '../core/fold/index.js'
import { RT } from '../core/runtime-events.js'
import { failAttempt } from './attempt-outcomes.js'
import {
  type EffectAdmissions,
  type EffectLimitSpec,
  type EffectPermit,
  type Execution,
  type Pass,
  reportBack,
} from './context.js'
import { executorOf } from './effect-runner.js'

/** A runnable attempt the pass may start now, with the permit it holds when it needed one. */
export interface AdmittedAttempt {
  effect: EffectRecord
  permit: EffectPermit | undefined
}

/** Whether any of these attempts (or a permit granted meanwhile) needs the gate. */
export function needsGate(
  pass: Pass,
  limits: EffectAdmissions,
  effects: readonly EffectRecord[],
): boolean {
  if (pass.mem.permits.size > 0) return true
  for (const effect of effects)
    if (limits.limited(executorOf(pass.ctx, pass.mem, effect))) return true
  return false
}

/**
 * The attempts that may start now: those without flow control, those granted a permit while
 * they waited, and those that get one at once. The others wait, `queued` (recorded by this
 * pass's batch, with the attempt number they will start as: waiting uses up no retry), each
 * as an execution in the run's memory that a permit ends (the run is then driven again). A key
 * function that throws fails the attempt, terminally. Permits of effects no longer runnable (a
 * cancel came first) are let go.
 */
export async function admitAttempts(
  pass: Pass,
  limits: EffectAdmissions,
  effects: readonly EffectRecord[],
): Promise<AdmittedAttempt[]> {
  const { ctx, mem } = pass
  const runId = pass.fold.state.runId
  const out: AdmittedAttempt[] = []
  for (const effect of effects) {
    const definition = executorOf(ctx, mem, effect)
    if (!limits.limited(definition)) {
      out.push({ effect, permit: undefined })
      continue
    }
    const granted = mem.permits.get(effect.effectId)
    if (granted) {
      mem.permits.delete(effect.effectId)
      observeAdmitted(pass, granted, effect)
      out.push({ effect, permit: granted })
      continue
    }
    const attempt = effect.attempt + 1
    let spec: EffectLimitSpec
    try {
      spec = limits.specOf(definition, effect.type, effect.input)
    } catch (error) {
      failAttempt(pass, effect, attempt, toErrorInfo(error), 'terminal')
      continue
    }
    const holder = `${runId}/${effect.effectId}/${attempt}`
    if (!limits.hasWaiters(spec)) {
      const result = await limits.acquire(spec, holder)
      if ('holder' in result) {
        observeAdmitted(pass, result, effect)
        out.push({ effect, permit: result })
        continue
      }
      queue(pass, limits, effect, spec, holder, result)
    } else {
      const c = spec.concurrency
      const denied = c
        ? { reason: 'concurrency' as const, key: c.key, limit: c.limit }
        : { reason: 'rate' as const, key: spec.rate?.key ?? '', limit: spec.rate?.limit ?? 0 }
      queue(pass, limits, effect, spec, holder, denied)
    }
  }
  for (const [effectId, permit] of mem.permits) {
    if (wanted(pass, pass.fold.effects[effectId])) continue
    mem.permits.delete(effectId)
    limits.release(permit)
  }
  return out
}

/** An effect that may still start an attempt (not cancelled, finished or started meanwhile). */
function wanted(pass: Pass, effect: EffectRecord | undefined): boolean {
  if (!effect || isTerminal(pass.fold.state.status)) return false
  if (
    effect.status !== 'requested' &&
    effect.status !== 'queued' &&
    effect.status !== 'retry_scheduled'
  )
    return false
  const thread = pass.fold.state.threads[effect.threadId]
  return thread !== undefined && !isTerminal(thread.status)
}

/**
 * The attempt waits: `runtime.effect.queued` (also when a process that took the run over starts
 * waiting again, so the log says who waits) and a wait in the run's memory until a permit.
 */
function queue(
  pass: Pass,
  limits: EffectAdmissions,
  effect: EffectRecord,
  spec: EffectLimitSpec,
  holder: string,
  denied: { reason: 'concurrency' | 'rate'; key: string; limit: number },
): void {
  const { ctx, mem } = pass
  const runId = pass.fold.state.runId
  const { effectId, threadId } = effect
  const attempt = effect.attempt + 1
  pass.batch.add(
    RT.effectQueued,
    { effectId, attempt, queue: spec.queue, ...denied },
    { threadId, effectId },
  )
  let cancel = () => {}
  const waiting: Execution = { effectId, attempt, abort: () => cancel() }
  mem.inflight.set(effectId, waiting)
  const since = ctx.clock.now()
  cancel = limits.wait(spec, holder, (permit) => {
    if (mem.inflight.get(effectId) !== waiting || mem.stopped) {
      limits.release(permit)
      return
    }
    permit.waitedMs = ctx.clock.now() - since
    mem.inflight.delete(effectId)
    mem.permits.set(effectId, permit)
    reportBack(ctx, mem, runId)
  })
}

/** An attempt admitted (an observer's wait-time metric). */
function observeAdmitted(pass: Pass, permit: EffectPermit, effect: EffectRecord): void {
  if (!pass.ctx.observing) return
  const { queue } = permit.spec
  const runId = pass.fold.state.runId
  const waitedMs = permit.waitedMs ?? 0
  pass.ctx.observe({ type: 'flow.admitted', runId, queue, effectId: effect.effectId, waitedMs })
}

/** Lets go of permits granted and not used (the run stopped here, or another process took it). */
export function releasePermits(pass: Pick<Pass, 'ctx' | 'mem'>): void {
  const limits = pass.ctx.effectLimits
  if (!limits) return
  for (const permit of pass.mem.permits.values()) limits.release(permit)
  pass.mem.permits.clear()
}
