import type { Definition } from '../core/definition.js'
import { InvalidScheduleError } from '../core/errors.js'
import { checkJson, type Json, type JsonObject } from '../core/json.js'
import type { CatchUpPolicy, OverlapPolicy, ScheduleSpec } from '../core/schedule-types.js'
import { checkCron, checkTimezone } from './schedule-ticks.js'

export type { CatchUpPolicy, OverlapPolicy, ScheduleSpec }

/** The tick a run is started for: the input function's argument. */
export interface ScheduleTick {
  /** The tick's time (engine clock ms), before jitter: the run id names it. */
  at: number
  schedule: string
}

export type ScheduleInput = Json | ((tick: ScheduleTick) => Json)

/** What a tick starts: a definition object, or one named (as `startRun` takes it). */
export type ScheduleStart =
  | { definition: Definition; input?: ScheduleInput }
  | { kind: string; definitionName: string; definitionVersion?: string; input?: ScheduleInput }

export interface ScheduleOptions {
  /** Unique in the store: 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit. */
  name: string
  /** A 5-field (minute first) or 6-field (second first) cron expression; or `every`. */
  cron?: string
  /** A period in ms (ticks at whole multiples of it since the epoch); or `cron`. */
  every?: number
  /** An IANA time zone the cron expression reads its fields in; default `'UTC'`. */
  timezone?: string
  start: ScheduleStart
  /** Default `'skip'`. */
  overlap?: OverlapPolicy
  /** Default `'latest'`. */
  catchUp?: CatchUpPolicy
  /** How many missed ticks `catchUp: 'all'` starts at most (the latest ones); default 100. */
  maxCatchUp?: number
  /** Each tick fires up to this many ms after its time (a fixed spread per tick); default 0. */
  jitterMs?: number
  /** Created paused (a code-defined schedule: only when the store has none by this name). */
  paused?: boolean
  description?: string
}

/** A schedule as `defineSchedule` returns it: checked, frozen. */
export interface ScheduleDefinition extends Readonly<ScheduleOptions> {
  readonly kindOf: 'schedule'
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/
const OVERLAP: readonly OverlapPolicy[] = ['skip', 'buffer-one', 'allow', 'cancel-previous']
const CATCH_UP: readonly CatchUpPolicy[] = ['none', 'latest', 'all']
/** The fields a schedule spec may carry (HTTP bodies are checked against the same list). */
export const SCHEDULE_FIELDS: readonly string[] = [
  'name',
  'cron',
  'every',
  'timezone',
  'start',
  'overlap',
  'catchUp',
  'maxCatchUp',
  'jitterMs',
  'paused',
  'description',
]
const FIELDS = new Set(SCHEDULE_FIELDS)
const MAX_CATCH_UP = 1000
const DAY_MS = 86_400_000

const invalid = (name: unknown, message: string, field?: string): never => {
  const details: JsonObject = {}
  if (typeof name === 'string') details.schedule = name
  if (field) details.field = field
  throw new InvalidScheduleError(
    `schedule${typeof name === 'string' ? ` ${name}` : ''}: ${message}`,
    details,
  )
}

/**
 * Declares a schedule for `createEngine({ schedules })` (docs/schedules.md). Checks what can be
 * checked without an engine (the cron expression, the time zone, the policies); the engine
 * checks the start's definition when it registers it.
 *
 * @example
 * defineSchedule({ name: 'invoice-sweep', cron: '0 9 * * 1-5', timezone: 'Europe/Berlin',
 *   start: { definition: sweep, input: ({ at }) => ({ day: new Date(at).toISOString() }) } })
 */
export function defineSchedule(options: ScheduleOptions): ScheduleDefinition {
  toSpec(options)
  return Object.freeze({ ...options, kindOf: 'schedule' as const })
}

/** The JSON spec of a schedule's options, or INVALID_SCHEDULE naming what is wrong. */
export function toSpec(options: ScheduleOptions): ScheduleSpec {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    invalid(undefined, 'a schedule is an object { name, cron | every, start, … }')
  }
  const o = options as ScheduleOptions & Record<string, unknown>
  const name = o.name
  if (typeof name !== 'string' || !NAME.test(name)) {
    invalid(
      name,
      `name must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit; got ${JSON.stringify(name)}`,
      'name',
    )
  }
  for (const key of Object.keys(o)) {
    if (!FIELDS.has(key) && key !== 'kindOf')
      invalid(name, `unknown field ${JSON.stringify(key)}`, key)
  }
  const hasCron = o.cron !== undefined && o.cron !== null
  const hasEvery = o.every !== undefined && o.every !== null
  if (hasCron === hasEvery) {
    invalid(name, 'give exactly one of cron (an expression) or every (a period in ms)', 'cron')
  }
  const timezone = o.timezone ?? 'UTC'
  if (typeof timezone !== 'string' || !checkTimezone(timezone)) {
    invalid(
      name,
      `timezone must be an IANA time zone name; got ${JSON.stringify(timezone)}`,
      'timezone',
    )
  }
  if (hasCron) {
    const problem = typeof o.cron === 'string' ? checkCron(o.cron, timezone) : 'not a string'
    if (problem) invalid(name, `cron ${JSON.stringify(o.cron)} is not valid: ${problem}`, 'cron')
  }
  if (hasEvery) {
    const every = o.every as number
    if (!Number.isInteger(every) || every < 1000 || every > 366 * DAY_MS) {
      invalid(name, 'every must be a whole number of ms from 1000 (1 s) to 366 days', 'every')
    }
  }
  const overlap = o.overlap ?? 'skip'
  if (!OVERLAP.includes(overlap)) {
    invalid(
      name,
      `overlap must be one of ${OVERLAP.join(', ')}; got ${JSON.stringify(overlap)}`,
      'overlap',
    )
  }
  const catchUp = o.catchUp ?? 'latest'
  if (!CATCH_UP.includes(catchUp)) {
    invalid(
      name,
      `catchUp must be one of ${CATCH_UP.join(', ')}; got ${JSON.stringify(catchUp)}`,
      'catchUp',
    )
  }
  const maxCatchUp = o.maxCatchUp ?? 100
  if (!Number.isInteger(maxCatchUp) || maxCatchUp < 1 || maxCatchUp > MAX_CATCH_UP) {
    invalid(name, `maxCatchUp must be an integer from 1 to ${MAX_CATCH_UP}`, 'maxCatchUp')
  }
  const jitterMs = o.jitterMs ?? 0
  if (!Number.isInteger(jitterMs) || jitterMs < 0 || jitterMs > DAY_MS) {
    invalid(name, 'jitterMs must be a whole number of ms from 0 to one day', 'jitterMs')
  }
  if (o.paused !== undefined && typeof o.paused !== 'boolean') {
    invalid(name, 'paused must be a boolean', 'paused')
  }
  if (
    o.description !== undefined &&
    (typeof o.description !== 'string' || o.description.length > 1000)
  ) {
    invalid(name, 'description must be a string of at most 1000 characters', 'description')
  }
  return {
    name,
    cron: hasCron ? (o.cron as string).trim() : null,
    every: hasEvery ? (o.every as number) : null,
    timezone,
    start: startSpec(name, o.start),
    overlap,
    catchUp,
    maxCatchUp,
    jitterMs,
    description: o.description ?? null,
  }
}

function startSpec(name: string, start: unknown): ScheduleSpec['start'] {
  if (start === null || typeof start !== 'object' || Array.isArray(start)) {
    return invalid(
      name,
      'start must be { definition, input? } or { kind, definitionName, definitionVersion?, input? }',
      'start',
    )
  }
  const s = start as Record<string, unknown>
  let ref: { kind: string; definitionName: string; definitionVersion: string | null }
  const known = new Set(['definition', 'kind', 'definitionName', 'definitionVersion', 'input'])
  for (const key of Object.keys(s)) {
    if (!known.has(key)) invalid(name, `start has an unknown field ${JSON.stringify(key)}`, 'start')
  }
  if (s.definition !== undefined) {
    const d = s.definition as Definition
    if (!d || typeof d.kind !== 'string' || typeof d.name !== 'string') {
      invalid(name, 'start.definition must be a definition object (defineWorkflow, …)', 'start')
    }
    if (s.kind !== undefined || s.definitionName !== undefined) {
      invalid(
        name,
        'start takes a definition object or { kind, definitionName }, not both',
        'start',
      )
    }
    ref = { kind: d.kind, definitionName: d.name, definitionVersion: d.version ?? null }
  } else {
    if (typeof s.kind !== 'string' || typeof s.definitionName !== 'string') {
      invalid(name, 'start needs a definition object or { kind, definitionName } strings', 'start')
    }
    if (s.definitionVersion !== undefined && typeof s.definitionVersion !== 'string') {
      invalid(name, 'start.definitionVersion must be a string', 'start')
    }
    ref = {
      kind: s.kind as string,
      definitionName: s.definitionName as string,
      definitionVersion: (s.definitionVersion as string | undefined) ?? null,
    }
  }
  if (typeof s.input === 'function') return { ...ref, input: null, inputFromCode: true }
  let input: Json = null
  if (s.input !== undefined) {
    const checked = checkJson(s.input)
    if (!checked.ok) {
      const { path, message } = checked.problem
      invalid(name, `start.input must be JSON: ${path ? `${path}: ` : ''}${message}`, 'start')
    } else input = checked.value
  }
  return { ...ref, input, inputFromCode: false }
}
