import type { EventEnvelope } from '../envelope.js'
import { DeterminismError, UnsupportedProtocolError } from '../errors.js'
import type { Registry } from '../registry.js'
import { RUNTIME_PREFIX, type RuntimeEvent, type RuntimeEventType } from '../runtime-events.js'
import { effectCases } from './effects.js'
import { reduceProjections } from './projections.js'
import { runCases } from './run.js'
import { emptyFold, type FoldCase, type FoldCases, type RunFold } from './run-fold.js'
import { setCommand } from './thread-book.js'
import { threadContext } from './thread-context.js'
import { threadCases } from './threads.js'
import { waitCases } from './waits.js'

/**
 * Every runtime event type the fold changes something for, and its case: one family a file.
 * A runtime type in none of them (`runtime.cancel.requested`) changes only `lastSeq`.
 */
const CASES = new Map<string, FoldCase<RuntimeEventType>>(
  [runCases, threadCases, waitCases, effectCases].flatMap(
    (cases: FoldCases) => Object.entries(cases) as Array<[string, FoldCase<RuntimeEventType>]>,
  ),
)

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
      CASES.get(event.type)?.(fold, event as unknown as RuntimeEvent, registry)
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

/** The thread's kind steps over the event (the root thread's, for an event without a thread). */
function stepThread(registry: Registry, fold: RunFold, event: EventEnvelope): void {
  const threadId =
    event.threadId ?? (event.type.startsWith(RUNTIME_PREFIX) ? null : fold.state.rootThreadId)
  if (!threadId) return
  const book = fold.books[threadId]
  if (!book) return
  const { kind, ctx } = threadContext(registry, fold, threadId)
  if (kind.step) book.kindState = kind.step(book.kindState, event, ctx)
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
