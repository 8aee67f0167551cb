import type { StartRunArgs } from '../core/api-types.js'
import type { RunState, StartResult } from '../core/envelope.js'
import { isTerminal } from '../core/envelope.js'
import { RunNotFoundError, SkeinError, StartConflictError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import type { ScheduleRecord } from '../core/ports.js'
import type { Logger } from './logger.js'
import type { ScheduleTick } from './schedule-spec.js'
import {
  noteRun,
  type ScheduleState,
  type StartReason,
  specOf,
  stateOf,
  wakeAtOf,
} from './schedule-state.js'
import { fireTime, type Ticks, tickRunId } from './schedule-ticks.js'
import { planTicks } from './tick-plan.js'

/** What the ticker needs of the engine. */
export interface ScheduleHost {
  startRun(args: StartRunArgs): Promise<StartResult>
  getRun(runId: string): Promise<RunState>
  cancel(runId: string): Promise<RunState>
  /** The input function of a code-defined schedule, if this process defined it. */
  inputOf(schedule: string): ((tick: ScheduleTick) => Json) | undefined
  log: Logger
  /** Told of each tick whose run this process started (observers: `schedule.tick`). */
  started?(tick: StartedTick): void
}

/** A tick whose run was started: what `schedule.tick` observations carry. */
export interface StartedTick {
  schedule: string
  runId: string
  definitionName: string
  reason: StartReason
  /** When the tick was due (its time plus the schedule's jitter). */
  fireAt: number
}

/** Errors of the start itself: recorded on the schedule, the tick is not retried. */
const RECORDED = new Set([
  'DEFINITION_NOT_FOUND',
  'INVALID_INPUT',
  'INVALID_REQUEST',
  'INVALID_EVENT',
  'DEFINITION_CHANGED',
])

/**
 * Starts the run of one tick: its deterministic id makes a second start (another host, a
 * retry after a crash) a no-op, and a start that conflicts (the input function gave another
 * value, the default version changed) means the tick's run exists already.
 */
export async function startTick(
  host: ScheduleHost,
  record: ScheduleRecord,
  state: ScheduleState,
  tick: number,
  reason: StartReason,
  now: number,
  runId = tickRunId(record.name, tick),
): Promise<RunState | undefined> {
  const spec = specOf(record)
  let input: Json = spec.start.input
  if (spec.start.inputFromCode) {
    const fn = host.inputOf(record.name)
    if (!fn) {
      fail(
        state,
        now,
        tick,
        'INPUT_NOT_DEFINED',
        `schedule ${record.name}'s input is a function this process does not define: define the schedule in this process's createEngine({ schedules })`,
      )
      return undefined
    }
    input = fn({ at: tick, schedule: record.name })
  }
  const args: StartRunArgs = {
    kind: spec.start.kind,
    definitionName: spec.start.definitionName,
    input,
    runId,
  }
  if (spec.start.definitionVersion !== null) args.definitionVersion = spec.start.definitionVersion
  try {
    const { state: run } = await host.startRun(args)
    noteRun(state, { runId, tick, startedAt: now, reason })
    host.started?.({
      schedule: record.name,
      runId,
      definitionName: spec.start.definitionName,
      reason,
      fireAt: fireTime(spec, tick),
    })
    return run
  } catch (error) {
    if (StartConflictError.is(error)) {
      noteRun(state, { runId, tick, startedAt: now, reason })
      state.started--
      return undefined
    }
    if (SkeinError.is(error) && RECORDED.has(error.code)) {
      fail(state, now, tick, error.code, error.message)
      return undefined
    }
    throw error
  }
}

function fail(state: ScheduleState, now: number, tick: number, code: string, message: string) {
  state.lastError = { at: now, tick, code, message: message.slice(0, 1000) }
}

/** Whether the run is still going (a run that does not exist is not). */
async function active(host: ScheduleHost, runId: string | null): Promise<boolean> {
  if (runId === null) return false
  try {
    return !isTerminal((await host.getRun(runId)).status)
  } catch (error) {
    if (RunNotFoundError.is(error)) return false
    throw error
  }
}

/**
 * One look at a due schedule: the buffered tick if its turn came, then the due ticks by the
 * plan and the overlap policy. Returns the record to write (the caller compares-and-sets it).
 */
export async function runDue(
  host: ScheduleHost,
  ticks: Ticks,
  record: ScheduleRecord,
  now: number,
  attendedUntil: number,
  pollMs: number,
): Promise<ScheduleRecord> {
  const spec = specOf(record)
  const state: ScheduleState = structuredClone(stateOf(record))
  let running: boolean | undefined
  const isRunning = async () => (running ??= await active(host, state.lastRunId))
  const started = (run: RunState | undefined) => {
    running = run !== undefined && !isTerminal(run.status)
  }
  if (state.buffered !== null && !(await isRunning())) {
    const tick = state.buffered
    state.buffered = null
    started(await startTick(host, record, state, tick, 'buffered', now))
  }
  const plan = planTicks(ticks, spec, state.nextTick, now, attendedUntil)
  state.missed += plan.missed
  for (const { tick, reason } of plan.start) {
    const overlap = spec.overlap
    if (overlap !== 'allow' && (await isRunning())) {
      if (overlap === 'skip' || (overlap === 'buffer-one' && state.buffered !== null)) {
        state.skipped++
        continue
      }
      if (overlap === 'buffer-one') {
        state.buffered = tick
        continue
      }
      await cancelQuietly(host, state.lastRunId as string)
    }
    started(await startTick(host, record, state, tick, reason, now))
  }
  state.nextTick = plan.nextTick
  return {
    ...record,
    state,
    wakeAt: wakeAtOf(spec, state, record.paused, now, pollMs),
    version: record.version + 1,
    updatedAt: now,
  }
}

async function cancelQuietly(host: ScheduleHost, runId: string): Promise<void> {
  try {
    await host.cancel(runId)
  } catch (error) {
    if (!RunNotFoundError.is(error)) throw error
  }
}
