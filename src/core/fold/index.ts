// The fold of a run's log, by event family: run.ts, threads.ts, waits.ts, effects.ts (each a
// table of cases keyed by runtime event type, with the records it owns), projections.ts and
// snapshot.ts; apply-event.ts dispatches one event to its family.

export { applyEvent, foldEvents } from './apply-event.js'
export { type EffectRecord, type EffectStatus, requestedEffect } from './effect-record.js'
export { holdsProjection, missingProjections } from './projections.js'
export { LOG_PROTOCOL_VERSION } from './protocol.js'
export { cloneFold, emptyFold, type RunFold, viewState } from './run-fold.js'
export {
  foldFromSnapshot,
  isReadableSnapshot,
  SNAPSHOT_FORMAT,
  snapshotFold,
} from './snapshot.js'
export {
  allCommands,
  type CommandRecord,
  type CommandStatus,
  commandOf,
  type ThreadBook,
} from './thread-book.js'
export { readingRegistry, type ThreadRuntime, threadContext } from './thread-context.js'
export type { TimerRecord, WaitRecord } from './wait-record.js'
