import { mergeAttributes } from '../attributes.js'
import { RT } from '../runtime-events.js'
import { dict } from './dict.js'
import { startProjections } from './projections.js'
import { readableProtocol } from './protocol.js'
import type { FoldCases } from './run-fold.js'
import { forgetThreadRuntime } from './thread-context.js'

// The run family: `runtime.run.*` and `runtime.signal.received`, what the run as a whole
// records: how it started (kind, definition, input, log protocol), its flow control's queueing
// and admission, how it ended, a migration to another version, and the idempotency keys of
// the signals it took.

export const runCases: FoldCases = {
  [RT.runStarted]: (fold, event, registry) => {
    const start = event.payload
    const state = fold.state
    // Everything after this event folds by the version the run was recorded with.
    fold.protocol = readableProtocol(state.runId, start.protocolVersion, 'its log')
    startProjections(registry, fold)
    state.rootThreadId = start.rootThreadId
    state.kind = start.kind
    state.definitionName = start.definitionName
    state.definitionVersion = start.definitionVersion
    state.createdAt = event.ts
    fold.startInput = start.input
    if (start.deadlineAt !== undefined) state.deadlineAt = start.deadlineAt
    if (start.attributes !== undefined) state.attributes = { ...start.attributes }
    if (event.idempotencyKey !== undefined) fold.startKey = event.idempotencyKey
  },
  [RT.signalReceived]: (fold, event) => {
    const key = event.payload.idempotencyKey
    if (fold.signalKeys[key] === undefined) fold.signalKeys[key] = event.seq
    ;(fold.signalDigests ??= dict())[key] = event.payload.digest
  },
  [RT.inputDeferred]: (fold, event) => {
    ;(fold.deferredInputs ??= dict())[String(event.seq)] = event.payload
    const key = event.idempotencyKey
    if (key === undefined) return
    if (fold.signalKeys[key] === undefined) fold.signalKeys[key] = event.seq
    if (event.payload.digest !== undefined)
      (fold.signalDigests ??= dict())[key] = event.payload.digest
  },
  [RT.inputApplied]: (fold, event) => {
    const pending = fold.deferredInputs
    if (!pending) return
    delete pending[String(event.payload.seq)]
    if (Object.keys(pending).length === 0) delete fold.deferredInputs
  },
  [RT.runQueued]: (fold, event) => {
    fold.state.status = 'queued'
    fold.flow = { queue: event.payload.queue, key: event.payload.key }
  },
  [RT.runAdmitted]: (fold, event) => {
    fold.state.status = 'running'
    fold.flow = { queue: event.payload.queue, key: event.payload.key }
  },
  [RT.runCompleted]: (fold, event) => {
    fold.state.status = 'completed'
    fold.state.output = event.payload.output ?? null
  },
  [RT.runFailed]: (fold, event) => {
    fold.state.status = 'failed'
    fold.state.error = event.payload.error
  },
  [RT.runCancelled]: (fold) => {
    fold.state.status = 'cancelled'
  },
  [RT.runMigrated]: (fold, event) => {
    // The run, and each thread named, folds and executes by the new version from here on.
    const { toVersion, threadIds, definitionFingerprint } = event.payload
    fold.state.definitionVersion = toVersion
    for (const threadId of threadIds) {
      const thread = fold.state.threads[threadId]
      const book = fold.books[threadId]
      if (!thread || !book) continue
      // Replaced, never mutated (thread-records.ts).
      fold.state.threads[threadId] = { ...thread, definitionVersion: toVersion }
      book.fingerprint = definitionFingerprint
      forgetThreadRuntime(book)
    }
  },
  [RT.runAttributes]: (fold, event) => {
    const next = mergeAttributes(fold.state.attributes, event.payload.attributes)
    if (next === undefined) delete fold.state.attributes
    else fold.state.attributes = next
  },
}
