import type { Outcome } from '../commands.js'
import type { Definition } from '../definition.js'
import { definitionLabel } from '../definition.js'
import { DeterminismError } from '../errors.js'
import type { Json } from '../json.js'
import type { DecideContext, KindContext, KindDefinition } from '../kind.js'
import type { Registry } from '../registry.js'
import type { RunFold } from './run-fold.js'
import { commandOf, outcomeOf, type ThreadBook } from './thread-book.js'

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

/**
 * Drops a thread's cached kind and contexts: its definition changed (a migrated run,
 * `runtime.run.migrated`), so the next use resolves it again.
 */
export function forgetThreadRuntime(book: ThreadBook): void {
  const cached = book as ThreadBook & { [CACHE]?: ThreadRuntime }
  if (cached[CACHE]) cached[CACHE] = undefined
}

export function threadContext(registry: Registry, fold: RunFold, threadId: string): ThreadRuntime {
  const book = fold.books[threadId] as ThreadBook & { [CACHE]?: ThreadRuntime }
  const cached = book[CACHE]
  if (cached) return cached
  const thread = fold.state.threads[threadId]
  const ref = { kind: thread.kind, name: thread.definitionName, version: thread.definitionVersion }
  const kind = registry.kinds.get(thread.kind)
  const definition = registry.resolve(ref)
  if ((!kind || !definition) && READING in registry) {
    return remember(book, inertRuntime(fold, threadId, thread.parentThreadId, book.input, ref))
  }
  if (!kind) {
    throw new DeterminismError(
      `run ${fold.state.runId}: thread ${threadId} is of kind "${thread.kind}", which no registered module provides; register the module that provides it`,
      { runId: fold.state.runId, threadId, kind: thread.kind, missing: definitionLabel(ref) },
    )
  }
  if (!definition) {
    throw new DeterminismError(
      `run ${fold.state.runId}: thread ${threadId} was started from ${definitionLabel(ref)}, which is not registered; register that definition version to continue this run`,
      { runId: fold.state.runId, threadId, missing: definitionLabel(ref) },
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
  return remember(book, runtime)
}

function remember(book: ThreadBook, runtime: ThreadRuntime): ThreadRuntime {
  Object.defineProperty(book, CACHE, { value: runtime, enumerable: false, writable: true })
  return runtime
}

const READING = Symbol('skein.reading')
const readingRegistries = new WeakMap<Registry, Registry>()

/**
 * The registry a fold for reading only uses (getRun, summaries, SSE, result): a thread whose
 * kind or definition version this host does not register folds its runtime events (statuses,
 * waits, effects, output) and keeps no kind state, so a host without a run's version can still
 * show it (docs/deploys.md). A writer never folds with it: it could not decide.
 */
export function readingRegistry(registry: Registry): Registry {
  let reading = readingRegistries.get(registry)
  if (!reading) {
    reading = Object.create(registry, { [READING]: { value: true } }) as Registry
    readingRegistries.set(registry, reading)
  }
  return reading
}

/** A thread this host cannot execute, folded for reading: no kind state, nothing to decide. */
function inertRuntime(
  fold: RunFold,
  threadId: string,
  parentThreadId: string | null,
  input: Json,
  ref: { kind: string; name: string; version: string },
): ThreadRuntime {
  const definition = { kind: ref.kind, name: ref.name, version: ref.version } as Definition
  const kind = {
    kind: ref.kind,
    initialState: () => null,
    decide: () => [],
  } as unknown as KindDefinition
  const ctx: KindContext = { runId: fold.state.runId, threadId, parentThreadId, definition, input }
  const decideCtx: DecideContext = { ...ctx, outcome: () => NONE }
  return { kind, ctx, decideCtx, ephemeral: undefined }
}
