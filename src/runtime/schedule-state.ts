import type { JsonObject } from '../core/json.js'
import type { ScheduleRecord } from '../core/ports.js'
import type { ScheduleSpec } from './schedule-spec.js'
import { fireTime, type Ticks } from './schedule-ticks.js'

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

export const RECENT = 10

export function initialState(nextTick: number | null): ScheduleState {
  return {
    nextTick,
    buffered: null,
    lastRunId: null,
    recent: [],
    started: 0,
    skipped: 0,
    missed: 0,
    lastError: null,
  }
}

export const stateOf = (record: ScheduleRecord): ScheduleState => record.state as ScheduleState
export const specOf = (record: ScheduleRecord): ScheduleSpec => record.spec as ScheduleSpec

/** Notes a started run in the state (newest first). */
export function noteRun(state: ScheduleState, entry: ScheduleRunEntry): void {
  state.lastRunId = entry.runId
  state.recent = [entry, ...state.recent.filter((r) => r.runId !== entry.runId)].slice(0, RECENT)
  state.started++
}

/**
 * When the ticker must look at the schedule next: its next tick's fire time, or sooner while a
 * tick is buffered (the active run's end is polled every `pollMs`); null while paused.
 */
export function wakeAtOf(
  spec: ScheduleSpec,
  state: ScheduleState,
  paused: boolean,
  now: number,
  pollMs: number,
): number | null {
  if (paused) return null
  const fire = state.nextTick === null ? null : fireTime(spec, state.nextTick)
  if (state.buffered === null) return fire
  return fire === null ? now + pollMs : Math.min(fire, now + pollMs)
}

/** The first tick after `now` (what a new or resumed schedule waits for). */
export const firstTickAfter = (ticks: Ticks, spec: ScheduleSpec, now: number): number | null =>
  ticks.next(spec, now)
