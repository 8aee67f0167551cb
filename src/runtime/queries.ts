import type { EffectAttemptView, ReplayStep, RunOperationalStatus } from '../core/api-types.js'
import { withProps } from '../core/copy.js'
import { deadlinesOf } from '../core/deadlines.js'
import type { EventEnvelope } from '../core/envelope.js'
import type { ErrorInfo } from '../core/errors.js'
import {
  applyEvent,
  emptyFold,
  foldEvents,
  foldFromSnapshot,
  type RunFold,
  readingRegistry,
  viewState,
} from '../core/fold/index.js'
import { asRuntimeEvent, RT } from '../core/runtime-events.js'
import type { EngineContext } from './context.js'

/** `inspectRun`: threads, open waits, unfinished effects, deadlines and log bounds. */
export async function inspect(ctx: EngineContext, fold: RunFold): Promise<RunOperationalStatus> {
  const runId = fold.state.runId
  const bounds = await ctx.store.bounds(runId)
  return {
    runId,
    status: fold.state.status,
    threads: Object.values(fold.state.threads),
    waits: Object.values(fold.waits).map((w) => ({
      waitId: w.waitId,
      threadId: w.threadId,
      key: w.key,
      on: w.on,
    })),
    effects: Object.values(fold.effects).map((e) => ({
      effectId: e.effectId,
      threadId: e.threadId,
      type: e.type,
      attempt: e.attempt,
      status: e.status,
      // The next attempt's time counts only while one is scheduled: an effect that failed for
      // good keeps the time of a retry that already happened, and nothing is due for it.
      deadlineAt:
        e.deadlineAt ?? (e.status === 'retry_scheduled' ? (e.nextAttemptAt ?? null) : null),
      lastError: e.lastError ?? null,
    })),
    deadlines: deadlinesOf(fold)
      .sort((a, b) => a.at - b.at)
      .map((d) =>
        withProps(d, { kind: d.kind === 'interrupted-attempt' ? 'retry' : d.kind, runId }),
      ),
    head: bounds.head,
    tail: bounds.tail,
  }
}

/** Every durable effect attempt of a run, read from the retained log. */
export function effectAttempts(events: readonly EventEnvelope[]): EffectAttemptView[] {
  const info = new Map<string, { threadId: string; type: string }>()
  const attempts = new Map<string, EffectAttemptView>()
  const out: EffectAttemptView[] = []
  const open = (effectId: string, attempt: number, status: string, at: number) => {
    const meta = info.get(effectId) ?? { threadId: '', type: '' }
    const view: EffectAttemptView = { effectId, ...meta, attempt, status, startedAt: at }
    attempts.set(`${effectId}#${attempt}`, view)
    out.push(view)
    return view
  }
  const finish = (
    effectId: string,
    attempt: number,
    status: string,
    at: number,
    error?: ErrorInfo,
  ) => {
    const view = attempts.get(`${effectId}#${attempt}`) ?? open(effectId, attempt, status, at)
    view.status = status
    view.finishedAt = at
    if (error) view.error = error
  }
  for (const recorded of events) {
    const event = asRuntimeEvent(recorded)
    switch (event?.type) {
      case RT.effectRequested: {
        const p = event.payload
        info.set(p.effectId, { threadId: p.threadId, type: p.type })
        break
      }
      case RT.effectAttemptStarted:
        open(event.payload.effectId, event.payload.attempt, 'started', event.ts)
        break
      case RT.effectDispatched:
        open(event.payload.effectId, event.payload.attempt, 'dispatched', event.ts)
        break
      case RT.effectCompleted:
        finish(event.payload.effectId, event.payload.attempt, 'completed', event.ts)
        break
      case RT.effectFailed: {
        const p = event.payload
        if (p.attempt > 0)
          finish(p.effectId, p.attempt, p.final ? 'failed' : 'failed_retryable', event.ts, p.error)
        break
      }
      case RT.effectTimedOut:
        finish(event.payload.effectId, event.payload.attempt, 'timed_out', event.ts)
        break
      case RT.effectCancelled: {
        const p = event.payload
        if (attempts.has(`${p.effectId}#${p.attempt}`))
          finish(p.effectId, p.attempt, 'cancelled', event.ts)
        break
      }
      case RT.effectAmbiguous:
        finish(
          event.payload.effectId,
          event.payload.attempt,
          'ambiguous',
          event.ts,
          event.payload.error,
        )
        break
    }
  }
  return out
}

/**
 * The state before and after event `seq`, from retained data only; `null` when `seq` is
 * trimmed, past the tail, or no snapshot covers the trimmed prefix. Never executes effects.
 */
export async function replay(
  ctx: EngineContext,
  runId: string,
  seq: number,
): Promise<ReplayStep | null> {
  const { head, tail } = await ctx.store.bounds(runId)
  if (tail === 0 || seq < Math.max(1, head) || seq > tail) return null
  let fold = emptyFold(runId)
  const snapshot = await ctx.snapshots.latest(runId, seq - 1, { readOnly: true })
  const restored = snapshot && snapshot.seq >= head - 1 ? foldFromSnapshot(snapshot) : null
  if (restored) fold = restored
  else if (head > 1) return null
  const events = await ctx.store.read(runId, {
    fromSeq: fold.state.lastSeq + 1,
    limit: seq - fold.state.lastSeq,
  })
  const target = events[events.length - 1]
  if (!target || target.seq !== seq) return null
  // Folded to be shown only: a thread of a version this host lacks keeps no kind state.
  const registry = readingRegistry(ctx.registry)
  foldEvents(registry, runId, events.slice(0, -1), fold)
  const before = viewState(fold)
  applyEvent(registry, fold, target)
  return { seq, event: target, before, after: viewState(fold) }
}
