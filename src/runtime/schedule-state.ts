import type { ScheduleRecord } from '../core/ports.js'
import type {
  ScheduleRunEntry,
  ScheduleSpec,
  ScheduleState,
  StartReason,
} from '../core/schedule-types.js'

export type { ScheduleRunEntry, ScheduleState, StartReason }

import { fireTime, type Ticks } from './schedule-ticks.js'

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
