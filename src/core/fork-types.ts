import type { StartResult } from './envelope.js'

/**
 * Where `fork` cuts the source run's log (docs/operating-runs.md, "Fork"): exactly one of
 * `atSeq` and `atNode`. The new run copies the events before the cut and goes on from there.
 */
export interface ForkOptions {
  /** The first event not copied: the new run holds seqs 1 to atSeq - 1 and runs from there. */
  atSeq?: number
  /** A node of the run (workflows): the cut is before the node's first event. */
  atNode?: string
  /** Replaces the run's input (checked by the definition's input schema). */
  input?: unknown
  /** The new run's id (default: a new one). A run with this id already is START_CONFLICT. */
  runId?: string
}

/** The source run and the cut a fork was made at (also in its `runtime.run.started`). */
export interface ForkedFrom {
  runId: string
  atSeq: number
}

export interface ForkResult extends StartResult {
  forkedFrom: ForkedFrom
}
