import type { Outcome } from './commands.js'
import type { Definition } from './definition.js'
import { definitionLabel } from './definition.js'
import type { EventEnvelope, ThreadState } from './envelope.js'
import type { ErrorInfo } from './errors.js'
import { DeterminismError } from './errors.js'
import type { Json } from './json.js'
import type { DecideContext, KindContext, KindDefinition } from './kind.js'
import type { Registry } from './registry.js'
import type {
  EffectFailedPayload,
  EffectRequestedPayload,
  RunStartedPayload,
  ThreadStartedPayload,
  WaitRegisteredPayload,
  WaitSatisfiedPayload,
} from './runtime-events.js'
import { RT, RUNTIME_PREFIX } from './runtime-events.js'

export type {
  CommandRecord,
  CommandStatus,
  EffectRecord,
  EffectStatus,
  RunFold,
  ThreadBook,
  TimerRecord,
  WaitRecord,
  WorkerDeadlineKind,
  WorkerTimeouts,
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
import {
  type CommandRecord,
  commandOf,
  dict,
  type EffectRecord,
  emptyFold,
  outcomeOf,
  type RunFold,
  type ThreadBook,
  type WaitRecord,
} from './fold-types.js'

/**
 * The kind and contexts of a thread, cached on its book under a symbol key: invisible to JSON
 * (snapshots), rebuilt lazily after a restore. Not a WeakMap: those cost the GC dearly.
 */
const CACHE = Symbol('skein.thread')
const NONE: Outcome = Object.freeze({ status: 'none' })

export interface ThreadRuntime {
  kind: KindDefinition
  ctx: KindContext
  decideCtx: DecideContext
  /**
   * Outcomes of the thread's ephemeral inline attempts in the current wake iteration, which
   * `decideCtx.outcome` reports: never folded, never snapshotted (the wake clears them).
   */
  ephemeral: Map<string, Outcome> | undefined
}

export function threadContext(registry: Registry, fold: RunFold, threadId: string): ThreadRuntime {
  const book = fold.books[threadId] as ThreadBook & { [CACHE]?: ThreadRuntime }
  const cached = book[CACHE]
  if (cached) return cached
  const thread = fold.state.threads[threadId]
  const kind = registry.kinds.get(thread.kind)
  if (!kind) {
    throw new DeterminismError(
      `run ${fold.state.runId}: thread ${threadId} is of kind "${thread.kind}", which no registered module provides; register the module that provides it`,
      { runId: fold.state.runId, threadId, kind: thread.kind },
    )
  }
  const ref = { kind: thread.kind, name: thread.definitionName, version: thread.definitionVersion }
  const definition = registry.resolve(ref)
  if (!definition) {
    throw new DeterminismError(
      `run ${fold.state.runId}: thread ${threadId} was started from ${definitionLabel(ref)}, which is not registered; register that definition version to continue this run`,
      { runId: fold.state.runId, threadId },
    )
  }
  const ctx: KindContext = {
    runId: fold.state.runId,
    threadId,
    parentThreadId: thread.parentThreadId,
    definition: definition as Definition,
    input: book.input,
  }
  const decideCtx: DecideContext = {
    runId: ctx.runId,
    threadId,
    parentThreadId: ctx.parentThreadId,
    definition: ctx.definition,
    input: ctx.input,
    outcome: (key) => {
      const record = commandOf(book, key)
      return record ? outcomeOf(record) : (runtime.ephemeral?.get(key) ?? NONE)
    },
  }
  const runtime: ThreadRuntime = { kind, ctx, decideCtx, ephemeral: undefined }
  Object.defineProperty(book, CACHE, { value: runtime, enumerable: false, writable: true })
  return runtime
}

/** Replaces a thread's public state (never mutated: views handed out share these objects). */
const setThread = (
  fold: RunFold,
  threadId: string,
  status: ThreadState['status'],
  extra?: { output?: Json; error?: ErrorInfo },
): void => {
  const prev = fold.state.threads[threadId]
  if (!prev) return
  const next: ThreadState = {
    threadId: prev.threadId,
    parentThreadId: prev.parentThreadId,
    kind: prev.kind,
    definitionName: prev.definitionName,
    definitionVersion: prev.definitionVersion,
    status,
  }
  const output = extra ? extra.output : prev.output
  const error = extra ? extra.error : prev.error
  if (output !== undefined) next.output = output
  if (error !== undefined) next.error = error
  fold.state.threads[threadId] = next
}

const settleCommand = (
  fold: RunFold,
  threadId: string,
  key: string | undefined,
  patch: Partial<CommandRecord>,
): void => {
  if (key === undefined) return
  const book = fold.books[threadId]
  if (book && commandOf(book, key)) replaceCommand(book, key, patch)
}

/**
 * Command records are never mutated, only replaced: a fold copy (cloneFold) then shares them
 * instead of copying one per keyed command, which a long conversation has thousands of.
 * A field patched to `undefined` is removed.
 */
function replaceCommand(book: ThreadBook, key: string, patch: Partial<CommandRecord>): void {
  const prev = commandOf(book, key) as CommandRecord
  // Built field by field (one object shape for every record, no spread, no delete).
  const next: CommandRecord = { kind: prev.kind, id: prev.id, status: patch.status ?? prev.status }
  const value = 'value' in patch ? patch.value : prev.value
  const error = 'error' in patch ? patch.error : prev.error
  if (value !== undefined) next.value = value
  if (error !== undefined) next.error = error
  setCommand(book, key, next)
}

/** New keys moved to the shared archive at a time: amortizes the copy to 1/ARCHIVE_AT per key. */
const ARCHIVE_AT = 64

/**
 * Records `record` under `key`. Every ARCHIVE_AT new keys, `commands` moves into a new
 * `archived` map (the old archive is never mutated, so fold copies that share it stay valid).
 * Deterministic: the same events give the same split.
 */
function setCommand(book: ThreadBook, key: string, record: CommandRecord): void {
  const added = book.commands[key] === undefined
  book.commands[key] = record
  if (!added) return
  const fresh = (book.fresh ?? Object.keys(book.commands).length - 1) + 1
  if (fresh < ARCHIVE_AT) {
    book.fresh = fresh
    return
  }
  const archived = dict(book.archived)
  for (const k in book.commands) archived[k] = book.commands[k]
  book.archived = archived
  book.commands = dict()
  book.fresh = 0
}

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
    if (event.type.startsWith(RUNTIME_PREFIX)) applyRuntimeEvent(registry, fold, event)
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
    if (registry.foldProjections)
      for (const { name, projection } of registry.projectionList) {
        const prev = fold.projections[name] ?? projection.initial
        fold.projections[name] = projection.reduce(prev, event)
      }
  } catch (error) {
    if (DeterminismError.is(error)) throw error
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

/** The record of an effect just requested (before its first attempt). */
export function requestedEffect(r: EffectRequestedPayload): EffectRecord {
  const record: EffectRecord = {
    effectId: r.effectId,
    threadId: r.threadId,
    key: r.key,
    type: r.type,
    input: r.input,
    execution: r.execution,
    status: 'requested',
    attempt: 0,
  }
  if (r.retry !== undefined) record.retry = r.retry
  if (r.timeoutMs !== undefined) record.timeoutMs = r.timeoutMs
  return record
}

function applyRuntimeEvent(registry: Registry, fold: RunFold, event: EventEnvelope): void {
  const state = fold.state
  const p = event.payload as any
  switch (event.type) {
    case RT.runStarted: {
      const start = p as RunStartedPayload
      state.rootThreadId = start.rootThreadId
      state.kind = start.kind
      state.definitionName = start.definitionName
      state.definitionVersion = start.definitionVersion
      state.createdAt = event.ts
      fold.startInput = start.input
      if (event.idempotencyKey !== undefined) fold.startKey = event.idempotencyKey
      return
    }
    case RT.runCompleted:
      state.status = 'completed'
      state.output = p.output ?? null
      return
    case RT.runFailed:
      state.status = 'failed'
      state.error = p.error
      return
    case RT.runCancelled:
      state.status = 'cancelled'
      return
    case RT.threadStarted: {
      const t = p as ThreadStartedPayload
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
      const thread = state.threads[p.threadId]
      if (!thread) return
      const status =
        event.type === RT.threadCompleted
          ? 'completed'
          : event.type === RT.threadFailed
            ? 'failed'
            : 'cancelled'
      setThread(fold, p.threadId, status, {
        output: status === 'completed' ? (p.output ?? null) : undefined,
        error: status === 'failed' ? p.error : undefined,
      })
      for (const wait of openWaitsOf(fold, p.threadId)) {
        wait.status = 'cancelled'
        closeWait(fold, wait)
      }
      if (thread.parentThreadId) {
        const key = fold.books[p.threadId]?.spawnKey
        settleCommand(
          fold,
          thread.parentThreadId,
          key,
          status === 'completed'
            ? { status: 'completed', value: p.output ?? null }
            : status === 'failed'
              ? { status: 'failed', error: p.error }
              : {
                  status: 'failed',
                  error: { code: 'CANCELLED', message: p.reason ?? 'child thread cancelled' },
                },
        )
      }
      return
    }
    case RT.waitRegistered: {
      const w = p as WaitRegisteredPayload
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
      fold.timers[p.timerId] = { timerId: p.timerId, waitId: p.waitId, at: p.at }
      const wait = fold.waits[p.waitId]
      if (wait) wait.timerId = p.timerId
      return
    }
    case RT.timerFired:
      delete fold.timers[p.timerId]
      return
    case RT.waitSatisfied: {
      const s = p as WaitSatisfiedPayload
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
      const r = p as EffectRequestedPayload
      fold.effects[r.effectId] = requestedEffect(r)
      const book = fold.books[r.threadId]
      if (book) setCommand(book, r.key, { kind: 'invoke', id: r.effectId, status: 'pending' })
      return
    }
    case RT.effectAttemptStarted:
      patchEffect(fold, p.effectId, { status: 'started', attempt: p.attempt })
      if (p.deadlineAt !== undefined) foldWorkerTiming(fold, p)
      return
    case RT.effectDispatched:
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
    case RT.effectHeartbeat:
      patchEffect(fold, p.effectId, { deadlineAt: p.deadlineAt ?? undefined })
      return foldWorkerTiming(fold, p)
    case RT.effectCompleted: {
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
      const f = p as EffectFailedPayload
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
      const effect = fold.effects[p.effectId]
      if (effect) {
        effect.lastError = { code: 'TIMED_OUT', message: p.message ?? 'effect attempt timed out' }
        delete effect.deadlineAt
      }
      return
    }
    case RT.effectRetryScheduled: {
      const effect = fold.effects[p.effectId]
      if (!effect) return
      effect.status = 'retry_scheduled'
      effect.attempt = p.attempt - 1
      effect.nextAttemptAt = p.nextAttemptAt
      delete effect.deadlineAt
      if (p.reason === 'operator') reopenEffect(fold, effect)
      return
    }
    case RT.effectAmbiguous: {
      const effect = fold.effects[p.effectId]
      if (!effect) return
      effect.status = 'ambiguous'
      delete effect.deadlineAt
      if (p.error) effect.lastError = p.error
      return
    }
    case RT.effectCancelRequested:
      patchEffect(fold, p.effectId, { cancelRequested: true })
      if (p.deadlineAt !== undefined) foldWorkerTiming(fold, { ...p, timeout: 'cancellation' })
      return
    case RT.effectCancelled: {
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

/**
 * Worker timing fields of `dispatched`, worker `attempt.started`, `heartbeat` and
 * `cancel.requested`: the deadline, which timeout it enforces, start-to-close, and (at dispatch)
 * the timeouts that later callbacks apply.
 */
function foldWorkerTiming(fold: RunFold, p: any): void {
  const effect = fold.effects[p.effectId]
  if (!effect) return
  if (p.deadlineAt === null || p.deadlineAt === undefined) delete effect.deadlineAt
  else effect.deadlineAt = p.deadlineAt
  if (p.timeout) effect.deadlineKind = p.timeout
  else delete effect.deadlineKind
  if (p.closeAt !== undefined) effect.closeAt = p.closeAt
  if (p.timeouts !== undefined) effect.timeouts = p.timeouts
}

function patchEffect(fold: RunFold, effectId: string, patch: Partial<EffectRecord>): void {
  const effect = fold.effects[effectId]
  if (!effect) return
  Object.assign(effect, patch)
  if (patch.deadlineAt === undefined && 'deadlineAt' in patch) delete effect.deadlineAt
}

/**
 * An operator retry of an effect whose final failure failed its thread (and run): the command,
 * the thread chain up to the root and the run return to running.
 */
function reopenEffect(fold: RunFold, effect: EffectRecord): void {
  settleCommand(fold, effect.threadId, effect.key, { status: 'pending', error: undefined })
  let threadId: string | null = effect.threadId
  while (threadId) {
    const thread: ThreadState | undefined = fold.state.threads[threadId]
    if (thread?.status !== 'failed') break
    setThread(fold, threadId, 'running', { output: thread.output, error: undefined })
    const parent: string | null = thread.parentThreadId
    if (parent) {
      const key = fold.books[threadId]?.spawnKey
      if (key !== undefined) {
        settleCommand(fold, parent, key, { status: 'pending', error: undefined })
      }
    }
    threadId = parent
  }
  const root = fold.state.threads[fold.state.rootThreadId]
  if (fold.state.status === 'failed' && root && root.status === 'running') {
    fold.state.status = 'running'
    delete fold.state.error
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
