import type { Json, JsonObject } from './json.js'

// The shapes of schedules as the API shows them (docs/schedules.md): pure types, shared by the
// runtime that keeps them and the client that reads them over HTTP.

/** What a schedule does when a tick comes while its previous run is still going. */
export type OverlapPolicy = 'skip' | 'buffer-one' | 'allow' | 'cancel-previous'
/** What a schedule does with ticks that fell due while no host was ticking (an outage). */
export type CatchUpPolicy = 'none' | 'latest' | 'all'

/** A schedule's definition as the store keeps it (JSON): what every host ticks by. */
export interface ScheduleSpec extends JsonObject {
  name: string
  cron: string | null
  every: number | null
  timezone: string
  start: {
    kind: string
    definitionName: string
    definitionVersion: string | null
    /** The input, unless it is a function (`inputFromCode`): then each host's code computes it. */
    input: Json
    inputFromCode: boolean
  }
  overlap: OverlapPolicy
  catchUp: CatchUpPolicy
  maxCatchUp: number
  jitterMs: number
  description: string | null
}

/** Why a schedule started a run. */
export type StartReason = 'tick' | 'catch-up' | 'buffered' | 'trigger' | 'backfill'

export interface ScheduleRunEntry extends JsonObject {
  runId: string
  /** The tick the run is for (a trigger: when it was asked). */
  tick: number
  startedAt: number
  reason: StartReason
}

/** A schedule's progress, kept in its row's `state` (JSON). */
export interface ScheduleState extends JsonObject {
  /** The next tick not handled yet; null when the rule never fires again. */
  nextTick: number | null
  /** `buffer-one`: a tick waiting for the schedule's active run to end. */
  buffered: number | null
  /** The run the schedule started last (what `overlap` looks at). */
  lastRunId: string | null
  /** The latest runs it started, newest first (at most RECENT). */
  recent: ScheduleRunEntry[]
  /** Runs started, ticks skipped by `overlap`, ticks missed in an outage and not caught up. */
  started: number
  skipped: number
  missed: number
  /** The last tick that could not start its run (a definition gone, an input refused). */
  lastError: { at: number; tick: number; code: string; message: string } | null
}

/** A schedule as `engine.schedules` and `GET /schedules` show it. */
export interface ScheduleInfo {
  name: string
  spec: ScheduleSpec
  paused: boolean
  /** When the next tick fires (its time plus jitter); null while paused or never again. */
  nextFireAt: number | null
  /** The next few fire times (up to 5), for a look ahead; empty while paused. */
  upcoming: number[]
  state: ScheduleState
  version: number
  createdAt: number
  updatedAt: number
}

/** What `backfill` started: each tick's run id, and how many of those existed already. */
export interface BackfillResult {
  runIds: string[]
  existing: number
}
