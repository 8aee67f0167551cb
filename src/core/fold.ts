import type { EventEnvelope } from './envelope.js'
import { DeterminismError, UnsupportedProtocolError } from './errors.js'
import type { Registry } from './registry.js'
import { RT, RUNTIME_PREFIX, type RuntimeEvent } from './runtime-events.js'

export { requestedEffect } from './fold-effects.js'
export { type ThreadRuntime, threadContext } from './fold-thread.js'
export type {
  CommandRecord,
  CommandStatus,
  EffectRecord,
  EffectStatus,
  RunFold,
  ThreadBook,
  TimerRecord,
  WaitRecord,
} from './fold-types.js'
export {
  allCommands,
  cloneFold,
  commandOf,
  dict,
  emptyFold,
  outcomeOf,
  viewState,
} from './fold-types.js'

import { withProps } from './copy.js'
import { foldWorkerTiming, patchEffect, reopenEffect, requestedEffect } from './fold-effects.js'
import { reduceProjections, startProjections } from './fold-projections.js'
import { readableProtocol } from './fold-protocol.js'
import { replaceCommand, setCommand, setThread, settleCommand } from './fold-records.js'
import { threadContext } from './fold-thread.js'
import {
  commandOf,
  dict,
  emptyFold,
  type RunFold,
  type ThreadBook,
  type WaitRecord,
} from './fold-types.js'

/**
 * Folds one event into `fold` (mutating it). Deterministic: the same events give the same
 * fold. A recorded event the current code cannot fold raises DeterminismError naming the run
 * and seq.
 */
export function applyEvent(registry: Registry, fold: RunFold, event: EventEnvelope): void {
  const state = fold.state
  if (event.seq !== state.lastSeq + 1 && state.lastSeq !== 0) {
    throw new DeterminismError(
      `run ${state.runId}: event seq ${event.seq} follows seq ${state.lastSeq}; the log has a gap`,
      { runId: state.runId, seq: event.seq },
    )
  }
  state.lastSeq = event.seq
  state.updatedAt = event.ts
  try {
    // Only the runtime writes `runtime.*` types: the catalog types their payloads.
    if (event.type.startsWith(RUNTIME_PREFIX))
      applyRuntimeEvent(registry, fold, event as unknown as RuntimeEvent)
    else if (
      event.idempotencyKey !== undefined &&
      fold.signalKeys[event.idempotencyKey] === undefined
    )
      fold.signalKeys[event.idempotencyKey] = event.seq
    if (event.key !== undefined && event.threadId) {
      const book = fold.books[event.threadId]
      if (book) setCommand(book, event.key, { kind: 'emit', id: '', status: 'completed' })
    }
    stepThread(registry, fold, event)
    reduceProjections(registry, fold, event)
  } catch (error) {
    if (DeterminismError.is(error) || UnsupportedProtocolError.is(error)) throw error
    throw new DeterminismError(
      `run ${state.runId}: folding event seq ${event.seq} (${event.type}) threw: ${(error as Error)?.message ?? error}. The recorded log and the current code disagree; restore the code version that wrote this run or migrate it`,
      { runId: state.runId, seq: event.seq, type: event.type },
      { cause: error },
    )
  }
}

function stepThread(registry: Registry, fold: RunFold, event: EventEnvelope): void {
  const threadId =
    event.threadId ?? (event.type.startsWith(RUNTIME_PREFIX) ? null : fold.state.rootThreadId)
  if (!threadId) return
  const book = fold.books[threadId]
  if (!book) return
  const { kind, ctx } = threadContext(registry, fold, threadId)
  if (kind.step) book.kindState = kind.step(book.kindState, event, ctx)
}

function applyRuntimeEvent(registry: Registry, fold: RunFold, event: RuntimeEvent): void {
  const state = fold.state
  switch (event.type) {
    case RT.runStarted: {
      const start = event.payload
      // Everything after this event folds by the version the run was recorded with.
      fold.protocol = readableProtocol(state.runId, start.protocolVersion, 'its log')
      startProjections(registry, fold)
      state.rootThreadId = start.rootThreadId
      state.kind = start.kind
      state.definitionName = start.definitionName
      state.definitionVersion = start.definitionVersion
      state.createdAt = event.ts
      fold.startInput = start.input
      if (event.idempotencyKey !== undefined) fold.startKey = event.idempotencyKey
      return
    }
    case RT.signalReceived: {
      const received = event.payload
      const key = received.idempotencyKey
      if (fold.signalKeys[key] === undefined) fold.signalKeys[key] = event.seq
      ;(fold.signalDigests ??= dict())[key] = received.digest
      return
    }
    case RT.runCompleted:
      state.status = 'completed'
      state.output = event.payload.output ?? null
      return
    case RT.runFailed:
      state.status = 'failed'
      state.error = event.payload.error
      return
    case RT.runCancelled:
      state.status = 'cancelled'
      return
    case RT.threadStarted: {
      const t = event.payload
      state.threads[t.threadId] = {
        threadId: t.threadId,
        parentThreadId: t.parentThreadId,
        kind: t.kind,
        definitionName: t.definitionName,
        definitionVersion: t.definitionVersion,
        status: 'running',
      }
      // One shape for every book (fingerprint present or not): see fold-types.ts ThreadBook.
      const book: ThreadBook = {
        kindState: null,
        commands: dict(),
        input: t.input,
        openWaits: 0,
        fingerprint: t.definitionFingerprint,
      }
      if (t.key !== undefined) book.spawnKey = t.key
      fold.books[t.threadId] = book
      const { kind, ctx } = threadContext(registry, fold, t.threadId)
      book.kindState = kind.initialState(ctx)
      if (t.parentThreadId && t.key !== undefined) {
        const parent = fold.books[t.parentThreadId]
        if (parent) setCommand(parent, t.key, { kind: 'spawn', id: t.threadId, status: 'pending' })
      }
      return
    }
    case RT.threadCompleted:
    case RT.threadFailed:
    case RT.threadCancelled: {
      const p = event.payload
      const thread = state.threads[p.threadId]
      if (!thread) return
      const output = event.type === RT.threadCompleted ? (event.payload.output ?? null) : undefined
      const error = event.type === RT.threadFailed ? event.payload.error : undefined
      const status =
        event.type === RT.threadCompleted
          ? 'completed'
          : event.type === RT.threadFailed
            ? 'failed'
            : 'cancelled'
      setThread(fold, p.threadId, status, { output, error })
      for (const wait of openWaitsOf(fold, p.threadId)) {
        wait.status = 'cancelled'
        closeWait(fold, wait)
      }
      if (thread.parentThreadId) {
        const key = fold.books[p.threadId]?.spawnKey
        const reason = event.type === RT.threadCancelled ? event.payload.reason : undefined
        settleCommand(
          fold,
          thread.parentThreadId,
          key,
          status === 'completed'
            ? { status: 'completed', value: output }
            : status === 'failed'
              ? { status: 'failed', error }
              : {
                  status: 'failed',
                  error: { code: 'CANCELLED', message: reason ?? 'child thread cancelled' },
                },
        )
      }
      return
    }
    case RT.waitRegistered: {
      const w = event.payload
      fold.waits[w.waitId] = withProps(w, { status: 'open' as const })
      const book = fold.books[w.threadId]
      if (book) {
        setCommand(book, w.key, { kind: 'wait', id: w.waitId, status: 'pending' })
        book.openWaits++
        if (state.threads[w.threadId]?.status === 'running') setThread(fold, w.threadId, 'waiting')
      }
      return
    }
    case RT.timerSet: {
      const p = event.payload
      fold.timers[p.timerId] = { timerId: p.timerId, waitId: p.waitId, at: p.at }
      const wait = fold.waits[p.waitId]
      if (wait) wait.timerId = p.timerId
      return
    }
    case RT.timerFired:
      delete fold.timers[event.payload.timerId]
      return
    case RT.waitSatisfied: {
      const s = event.payload
      const wait = fold.waits[s.waitId]
      if (wait?.status !== 'open') return
      wait.status = s.timedOut ? 'timed_out' : 'satisfied'
      closeWait(fold, wait)
      settleCommand(
        fold,
        wait.threadId,
        wait.key,
        s.timedOut ? { status: 'timed_out' } : { status: 'completed', value: s.value },
      )
      return
    }
    case RT.effectRequested: {
      const r = event.payload
      fold.effects[r.effectId] = requestedEffect(r)
      const book = fold.books[r.threadId]
      if (book) setCommand(book, r.key, { kind: 'invoke', id: r.effectId, status: 'pending' })
      return
    }
    case RT.effectAttemptStarted: {
      const p = event.payload
      patchEffect(fold, p.effectId, { status: 'started', attempt: p.attempt })
      if (p.deadlineAt !== undefined) foldWorkerTiming(fold, p)
      return
    }
    case RT.effectDispatched: {
      const p = event.payload
      patchEffect(fold, p.effectId, {
        status: 'dispatched',
        attempt: p.attempt,
        deadlineAt: p.deadlineAt ?? undefined,
      })
      // A new attempt: nothing of the previous one's start or cancel request carries over.
      if (fold.effects[p.effectId]) {
        delete fold.effects[p.effectId].closeAt
        delete fold.effects[p.effectId].cancelRequested
      }
      return foldWorkerTiming(fold, p)
    }
    case RT.effectHeartbeat: {
      const p = event.payload
      patchEffect(fold, p.effectId, { deadlineAt: p.deadlineAt ?? undefined })
      return foldWorkerTiming(fold, p)
    }
    case RT.effectCompleted: {
      const p = event.payload
      const effect = fold.effects[p.effectId]
      if (!effect) return
      // Completed effects leave the fold: their result lives in the command record.
      delete fold.effects[p.effectId]
      settleCommand(fold, effect.threadId, effect.key, {
        status: 'completed',
        value: p.result ?? null,
      })
      return
    }
    case RT.effectFailed: {
      const f = event.payload
      const effect = fold.effects[f.effectId]
      if (!effect) return
      effect.lastError = f.error
      delete effect.deadlineAt
      if (f.final) {
        effect.status = f.reason === 'timeout' ? 'timed_out' : 'failed'
        settleCommand(fold, effect.threadId, effect.key, { status: 'failed', error: f.error })
      }
      return
    }
    case RT.effectTimedOut: {
      const p = event.payload
      const effect = fold.effects[p.effectId]
      if (effect) {
        effect.lastError = { code: 'TIMED_OUT', message: p.message ?? 'effect attempt timed out' }
        delete effect.deadlineAt
      }
      return
    }
    case RT.effectRetryScheduled: {
      const p = event.payload
      const effect = fold.effects[p.effectId]
      if (!effect) return
      effect.status = 'retry_scheduled'
      effect.attempt = p.attempt - 1
      effect.nextAttemptAt = p.nextAttemptAt
      delete effect.deadlineAt
      if (p.reason === 'operator') reopenEffect(fold, effect, event.seq)
      return
    }
    case RT.effectAmbiguous: {
      const p = event.payload
      const effect = fold.effects[p.effectId]
      if (!effect) return
      effect.status = 'ambiguous'
      delete effect.deadlineAt
      if (p.error) effect.lastError = p.error
      return
    }
    case RT.effectCancelRequested: {
      const p = event.payload
      patchEffect(fold, p.effectId, { cancelRequested: true })
      if (p.deadlineAt !== undefined) foldWorkerTiming(fold, { ...p, timeout: 'cancellation' })
      return
    }
    case RT.effectCancelled: {
      const p = event.payload
      const effect = fold.effects[p.effectId]
      if (!effect) return
      delete fold.effects[p.effectId]
      settleCommand(fold, effect.threadId, effect.key, { status: 'cancelled' })
      return
    }
    default:
      return
  }
}

function closeWait(fold: RunFold, wait: WaitRecord): void {
  if (wait.timerId) delete fold.timers[wait.timerId]
  delete fold.waits[wait.waitId]
  const book = fold.books[wait.threadId]
  if (!book) return
  book.openWaits = Math.max(0, book.openWaits - 1)
  if (wait.status === 'cancelled' && commandOf(book, wait.key)?.status === 'pending') {
    replaceCommand(book, wait.key, { status: 'cancelled' })
  }
  if (book.openWaits === 0 && fold.state.threads[wait.threadId]?.status === 'waiting')
    setThread(fold, wait.threadId, 'running')
}

/** Folds a whole log from the beginning (or from `fold`). */
export function foldEvents(
  registry: Registry,
  runId: string,
  events: readonly EventEnvelope[],
  fold: RunFold = emptyFold(runId),
): RunFold {
  for (const event of events) applyEvent(registry, fold, event)
  return fold
}

/** Marks waits of terminal threads closed (used by cancel/complete so timers stop). */
export function openWaitsOf(fold: RunFold, threadId: string): WaitRecord[] {
  const out: WaitRecord[] = []
  for (const waitId in fold.waits) {
    const wait = fold.waits[waitId]
    if (wait.threadId === threadId && wait.status === 'open') out.push(wait)
  }
  return out
}
