// `skein/testing`: helpers any app or test runner can import (nothing here loads a test
// framework). The vitest-bound store contract suites live in `skein/testing/vitest`.

export type {
  FailNextOptions,
  FaultDecision,
  FaultMethod,
  FaultPlan,
  FaultWhen,
  FaultyStore,
  InjectedFault,
  StoreCall,
} from './fault-store.js'
export { faultyStore, isInjectedFault } from './fault-store.js'
export type { GoldenMismatch, GoldenReport } from './golden-logs.js'
export { checkGoldenLogs, parseLog, recordGoldenLog } from './golden-logs.js'
export { makeEnvelopes } from './make-envelopes.js'
export type { ManualClock } from './manual-clock.js'
export { manualClock } from './manual-clock.js'
export type { FakeExecute, FakeTarget } from './replace-effects.js'
export { replaceEffects } from './replace-effects.js'
export type { NextCommand, ReplayedLog, ReplayOptions } from './replay-log.js'
export { replayLog } from './replay-log.js'
export type { SettlingClock, TestEngine, TestEngineOptions } from './test-engine.js'
export { createTestEngine } from './test-engine.js'
