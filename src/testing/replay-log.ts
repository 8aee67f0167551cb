// Replaying a recorded log without an engine: what a run's log folds to under the current code.
// Pure: no store, no clock, never executes an effect. Deliberately free of any test runner, so
// an application can call it from whatever runs its checks.

import type { Command } from '../core/commands.js'
import { type Deadline, deadlinesOf } from '../core/deadlines.js'
import { definitionLabel } from '../core/definition.js'
import type { EventEnvelope, RunState } from '../core/envelope.js'
import { isTerminal } from '../core/envelope.js'
import { DeterminismError, toErrorInfo } from '../core/errors.js'
import {
  commandOf,
  emptyFold,
  foldEvents,
  foldFromSnapshot,
  type RunFold,
  threadContext,
  viewState,
} from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { Module } from '../core/module.js'
import type { Snapshot } from '../core/ports.js'
import { Registry } from '../core/registry.js'
import type { WaitOn } from '../core/runtime-events.js'

/** Something a live thread's kind asks for now that its log does not already record. */
export interface NextCommand {
  threadId: string
  type: Command['type'] | 'decide-failed'
  key?: string
  /** The effect type, the spawned definition, the emitted event type, or the decide error. */
  name?: string
}

/** What a recorded log folds to: the parts of a run a change of replay behaviour would move. */
export interface ReplayedLog {
  /** The run's state, as `engine.getRun` returns it. */
  state: RunState
  /** Every registered projection's value (a projection a trimmed log cannot rebuild is absent). */
  projections: Record<string, Json>
  /** What the run is waiting on: open waits, unfinished effects, durable deadlines. */
  open: {
    waits: Array<{ waitId: string; threadId: string; key: string; on: WaitOn }>
    effects: Array<{
      effectId: string
      threadId: string
      key: string
      type: string
      status: string
      attempt: number
    }>
    deadlines: Deadline[]
  }
  /** Signal idempotency keys the run remembers. */
  signalKeys: string[]
  /**
   * Commands each live thread's `decide` would issue now that the log does not record. A log
   * recorded at rest has none; a change that makes an old log ask for new work shows up here.
   */
  next: NextCommand[]
}

export interface ReplayOptions {
  /**
   * The snapshot a trimmed log continues from: `events` then start right after `snapshot.seq`.
   */
  snapshot?: Snapshot
}

/**
 * Folds a recorded log with the given modules (the same list you pass to `createEngine`) and
 * reports what it folds to. Throws the engine's own errors when the log cannot be folded
 * (`DeterminismError` naming the run and seq, `UnsupportedProtocolError` for a newer log).
 *
 * @example
 * const { state, projections } = replayLog([workflow({ definitions })], events)
 */
export function replayLog(
  modules: readonly Module[],
  events: readonly EventEnvelope[],
  options: ReplayOptions = {},
): ReplayedLog {
  const registry = new Registry(modules)
  registry.foldProjections = true
  const snapshot = options.snapshot
  const runId = snapshot?.runId ?? events[0]?.runId
  if (runId === undefined) throw new TypeError('replayLog: the log has no events and no snapshot')
  let fold: RunFold = emptyFold(runId)
  if (snapshot) {
    const restored = foldFromSnapshot(snapshot)
    if (!restored) {
      throw new TypeError(
        `replayLog: snapshot of run ${runId} at seq ${snapshot.seq} has format ${snapshot.format}, which this version cannot read`,
      )
    }
    fold = restored
  }
  const from = fold.state.lastSeq + 1
  if (events.length > 0 && events[0].seq !== from) {
    throw new DeterminismError(
      `run ${runId}: the log starts at seq ${events[0].seq}, but ${snapshot ? `the snapshot ends at seq ${from - 1}` : 'a log without a snapshot starts at seq 1'}; pass the snapshot a trimmed log continues from`,
      { runId, seq: events[0].seq, expected: from },
    )
  }
  foldEvents(registry, runId, events, fold)
  const projections: Record<string, Json> = {}
  for (const { name } of registry.projectionList) {
    if (name in fold.projections) projections[name] = fold.projections[name]
  }
  return {
    state: plain(viewState(fold)),
    projections: plain(projections),
    open: openWork(fold),
    signalKeys: Object.keys(fold.signalKeys).sort(),
    next: nextCommands(registry, fold),
  }
}

function openWork(fold: RunFold): ReplayedLog['open'] {
  const byId = <T extends { [k: string]: any }>(list: T[], id: keyof T) =>
    list.sort((a, b) => (a[id] < b[id] ? -1 : a[id] > b[id] ? 1 : 0))
  return plain({
    waits: byId(
      Object.values(fold.waits).map((w) => ({
        waitId: w.waitId,
        threadId: w.threadId,
        key: w.key,
        on: w.on,
      })),
      'waitId',
    ),
    effects: byId(
      Object.values(fold.effects).map((e) => ({
        effectId: e.effectId,
        threadId: e.threadId,
        key: e.key,
        type: e.type,
        status: e.status,
        attempt: e.attempt,
      })),
      'effectId',
    ),
    deadlines: deadlinesOf(fold, true).sort(
      (a, b) =>
        a.at - b.at || (a.effectId ?? a.waitId ?? '').localeCompare(b.effectId ?? b.waitId ?? ''),
    ),
  })
}

/**
 * The commands live threads would issue now, filtered the way the writer filters them: a keyed
 * command whose key the thread already recorded is not issued again; a `cancel` acts only on a
 * pending command. Stops at a thread's `complete` or `fail`.
 */
function nextCommands(registry: Registry, fold: RunFold): NextCommand[] {
  const out: NextCommand[] = []
  if (isTerminal(fold.state.status)) return out
  for (const threadId of Object.keys(fold.state.threads).sort()) {
    const thread = fold.state.threads[threadId]
    const book = fold.books[threadId]
    if (!book || isTerminal(thread.status)) continue
    const { kind, decideCtx } = threadContext(registry, fold, threadId)
    let list: readonly Command[]
    try {
      list = kind.decide(book.kindState, decideCtx)
    } catch (error) {
      out.push({ threadId, type: 'decide-failed', name: toErrorInfo(error).message })
      continue
    }
    for (const command of list) {
      const next = newCommand(registry, book, threadId, command)
      if (next) out.push(next)
      if (command.type === 'complete' || command.type === 'fail') break
    }
  }
  return out
}

function newCommand(
  registry: Registry,
  book: RunFold['books'][string],
  threadId: string,
  command: Command,
): NextCommand | undefined {
  switch (command.type) {
    case 'invoke':
      if (commandOf(book, command.key)) return
      return {
        threadId,
        type: 'invoke',
        key: command.key,
        name: registry.effectType(command.effect) ?? '(unregistered effect)',
      }
    case 'spawn':
      if (commandOf(book, command.key)) return
      return {
        threadId,
        type: 'spawn',
        key: command.key,
        name: definitionLabel(command.definition),
      }
    case 'wait':
      if (commandOf(book, command.key)) return
      return { threadId, type: 'wait', key: command.key }
    case 'emit':
      if (command.key !== undefined && commandOf(book, command.key)) return
      return withKey({ threadId, type: 'emit', name: command.event }, command.key)
    case 'cancel':
      if (commandOf(book, command.key)?.status !== 'pending') return
      return { threadId, type: 'cancel', key: command.key }
    default:
      return { threadId, type: command.type }
  }
}

const withKey = (command: NextCommand, key: string | undefined): NextCommand =>
  key === undefined ? command : { ...command, key }

/** Plain JSON (no null prototypes, no undefined fields), as it is written to and read from files. */
const plain = <T>(value: T): T => JSON.parse(JSON.stringify(value))
