import { definitionLabel } from '../core/definition.js'
import type { RunState } from '../core/envelope.js'
import {
  DefinitionNotFoundError,
  InvalidScheduleError,
  RunNotFoundError,
  ScheduleExistsError,
  ScheduleNotFoundError,
} from '../core/errors.js'
import { canonicalJson, type Json } from '../core/json.js'
import type { Clock, ScheduleRecord, ScheduleStore } from '../core/ports.js'
import type { Registry } from '../core/registry.js'
import type { BackfillResult, ScheduleInfo, ScheduleSpec } from '../core/schedule-types.js'
import {
  type ScheduleDefinition,
  type ScheduleOptions,
  type ScheduleTick,
  toSpec,
} from './schedule-spec.js'

export type { BackfillResult, ScheduleInfo, ScheduleUpdate }

import type { ScheduleUpdate } from './schedule-api.js'

import { initialState, specOf, stateOf, wakeAtOf } from './schedule-state.js'
import { fireTime, type Ticks, tickRunId, triggerRunId } from './schedule-ticks.js'
import { type ScheduleHost, startTick } from './tick-runner.js'
import { validateWith } from './validate.js'

/** Ticks a backfill may cover at most (a larger range is refused, nothing started). */
export const MAX_BACKFILL = 1000
const UPCOMING = 5

const TIMING: ReadonlyArray<keyof ScheduleSpec> = ['cron', 'every', 'timezone', 'jitterMs']

/**
 * The schedules of one engine (`engine.schedules`, docs/schedules.md): every change is a
 * compare-and-set on the store's row, so all hosts see it; the ticker is kicked to look now.
 */
export class ScheduleService {
  /** The input functions of the schedules this process defined in code. */
  private readonly inputs = new Map<string, (tick: ScheduleTick) => Json>()

  constructor(
    private readonly store: ScheduleStore,
    private readonly registry: Registry,
    private readonly ticks: Ticks,
    private readonly clock: Clock,
    private readonly host: Omit<ScheduleHost, 'inputOf'>,
    private readonly pollMs: number,
    private readonly kick: () => void,
  ) {}

  /** The ticker's view of the engine. */
  get tickHost(): ScheduleHost {
    return { ...this.host, inputOf: (name) => this.inputs.get(name) }
  }

  async list(): Promise<ScheduleInfo[]> {
    return (await this.store.list()).map((r) => this.info(r))
  }

  async get(name: string): Promise<ScheduleInfo> {
    return this.info(await this.read(name))
  }

  async create(options: ScheduleOptions): Promise<ScheduleInfo> {
    const spec = await this.checked(options)
    const now = this.clock.now()
    const state = initialState(this.ticks.next(spec, now))
    const paused = options.paused === true
    const record: ScheduleRecord = {
      name: spec.name,
      spec,
      paused,
      wakeAt: wakeAtOf(spec, state, paused, now, this.pollMs),
      state,
      version: 1,
      createdAt: now,
      updatedAt: now,
    }
    if (!(await this.store.insert(record))) {
      throw new ScheduleExistsError(
        `schedule ${spec.name} exists already: update it or delete it first`,
        {
          schedule: spec.name,
        },
      )
    }
    this.noteInput(options)
    this.kick()
    return this.info(record)
  }

  async update(name: string, patch: ScheduleUpdate): Promise<ScheduleInfo> {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
      throw new InvalidScheduleError(`schedule ${name}: an update is an object of fields to change`)
    }
    if ('name' in patch) {
      throw new InvalidScheduleError(
        `schedule ${name}: a schedule cannot be renamed; create one under the new name`,
        {
          schedule: name,
          field: 'name',
        },
      )
    }
    return this.change(name, async (record) => {
      const current = specOf(record)
      const merged = { ...optionsOf(current), ...patch, name } as ScheduleOptions
      if (patch.cron !== undefined && patch.every === undefined) delete merged.every
      if (patch.every !== undefined && patch.cron === undefined) delete merged.cron
      // An input function stays the code's: another host's update keeps it.
      const codeInput = patch.start === undefined && current.start.inputFromCode
      const own = codeInput ? this.inputs.get(name) : undefined
      if (own) merged.start = { ...merged.start, input: own }
      const spec = await this.checked(merged)
      if (codeInput && !own) spec.start = { ...spec.start, input: null, inputFromCode: true }
      const state = structuredClone(stateOf(record))
      const now = this.clock.now()
      if (TIMING.some((k) => current[k] !== spec[k])) state.nextTick = this.ticks.next(spec, now)
      const paused = patch.paused ?? record.paused
      if (record.paused && !paused) state.nextTick = this.ticks.next(spec, now)
      if (!codeInput) this.noteInput(merged)
      return { ...record, spec, paused, state }
    })
  }

  pause(name: string): Promise<ScheduleInfo> {
    return this.change(name, async (record) => {
      const state = structuredClone(stateOf(record))
      state.buffered = null
      return { ...record, paused: true, state }
    })
  }

  /** Ticks that fell due while paused are skipped: the next one is the first after now. */
  resume(name: string): Promise<ScheduleInfo> {
    return this.change(name, async (record) => {
      if (!record.paused) return record
      const state = structuredClone(stateOf(record))
      state.nextTick = this.ticks.next(specOf(record), this.clock.now())
      return { ...record, paused: false, state }
    })
  }

  async delete(name: string): Promise<void> {
    if (!(await this.store.delete(name))) throw notFound(name)
    this.kick()
  }

  /** Starts a run now, outside the ticks (an operator's ask): overlap does not apply. */
  async trigger(name: string): Promise<{ runId: string; state: RunState | null }> {
    let runId = ''
    let run: RunState | undefined
    await this.change(name, async (record) => {
      const now = this.clock.now()
      const state = structuredClone(stateOf(record))
      runId = triggerRunId(name, now)
      run = await startTick(this.tickHost, record, state, now, 'trigger', now, runId)
      if (run === undefined && state.lastError?.at === now) {
        throw new InvalidScheduleError(`schedule ${name}: ${state.lastError.message}`, {
          schedule: name,
          code: state.lastError.code,
        })
      }
      return { ...record, state }
    })
    return { runId, state: run ?? null }
  }

  /**
   * Starts the run of every tick in `[from, to]` (engine clock ms), oldest first, with the
   * ticks' own run ids: ticks already started are not started again. Overlap does not apply.
   */
  async backfill(name: string, range: { from: number; to: number }): Promise<BackfillResult> {
    const { from, to } = range ?? ({} as { from: number; to: number })
    if (!Number.isFinite(from) || !Number.isFinite(to) || from > to) {
      throw new InvalidScheduleError(
        `schedule ${name}: backfill needs { from, to } times (ms) with from <= to`,
        {
          schedule: name,
        },
      )
    }
    const record = await this.read(name)
    const spec = specOf(record)
    const { ticks, skipped } = this.ticks.between(spec, from - 1, to, MAX_BACKFILL)
    if (skipped > 0) {
      throw new InvalidScheduleError(
        `schedule ${name}: the range holds ${ticks.length + skipped} ticks; backfill at most ${MAX_BACKFILL} at a time`,
        { schedule: name, ticks: ticks.length + skipped },
      )
    }
    const result: BackfillResult = { runIds: [], existing: 0 }
    await this.change(name, async (current) => {
      const now = this.clock.now()
      const state = structuredClone(stateOf(current))
      for (const tick of ticks) {
        const runId = tickRunId(name, tick)
        result.runIds.push(runId)
        if (await this.exists(runId)) result.existing++
        else await startTick(this.tickHost, current, state, tick, 'backfill', now)
      }
      return { ...current, state }
    })
    return result
  }

  /**
   * Registers the schedules defined in code (`createEngine({ schedules })`): a new one is
   * created; a stored one takes the code's definition (keeping its pause and progress).
   */
  async syncCode(definitions: readonly ScheduleDefinition[]): Promise<void> {
    const names = new Set<string>()
    for (const definition of definitions) {
      if (names.has(definition.name)) {
        throw new InvalidScheduleError(
          `schedule ${definition.name} is defined twice in createEngine({ schedules })`,
          {
            schedule: definition.name,
          },
        )
      }
      names.add(definition.name)
      const { kindOf: _, ...options } = definition
      const stored = await this.store.get(definition.name)
      if (!stored) {
        await this.create(options).catch(async (error) => {
          if (!ScheduleExistsError.is(error)) throw error
        })
        continue
      }
      const spec = await this.checked(options)
      this.noteInput(options)
      if (canonicalJson(spec) === canonicalJson(stored.spec)) continue
      const { paused: _p, ...fields } = options
      await this.update(definition.name, fields)
    }
  }

  /** The info of a record (next fire times computed here). */
  info(record: ScheduleRecord): ScheduleInfo {
    const spec = specOf(record)
    const state = stateOf(record)
    const upcoming: number[] = []
    if (!record.paused && state.nextTick !== null) {
      let tick: number | null = state.nextTick
      while (tick !== null && upcoming.length < UPCOMING) {
        upcoming.push(fireTime(spec, tick))
        tick = this.ticks.next(spec, tick)
      }
    }
    return {
      name: record.name,
      spec,
      paused: record.paused,
      nextFireAt: upcoming[0] ?? null,
      upcoming,
      state,
      version: record.version,
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
    }
  }

  private async exists(runId: string): Promise<boolean> {
    try {
      await this.host.getRun(runId)
      return true
    } catch (error) {
      if (RunNotFoundError.is(error)) return false
      throw error
    }
  }

  private async read(name: string): Promise<ScheduleRecord> {
    if (typeof name !== 'string') throw notFound(String(name))
    const record = await this.store.get(name)
    if (!record) throw notFound(name)
    return record
  }

  /** A compare-and-set change of one schedule, retried when another host changed it first. */
  private async change(
    name: string,
    edit: (record: ScheduleRecord) => Promise<ScheduleRecord>,
  ): Promise<ScheduleInfo> {
    for (let attempt = 0; ; attempt++) {
      const record = await this.read(name)
      const edited = await edit(record)
      if (edited === record) return this.info(record)
      const now = this.clock.now()
      const next: ScheduleRecord = {
        ...edited,
        version: record.version + 1,
        updatedAt: now,
        wakeAt: wakeAtOf(specOf(edited), stateOf(edited), edited.paused, now, this.pollMs),
      }
      if (await this.store.update(next, record.version)) {
        this.kick()
        return this.info(next)
      }
      if (attempt >= 20)
        throw new Error(`schedule ${name}: changed by others 20 times in a row; try again`)
    }
  }

  /** The spec of `options`, its start's definition registered and its input accepted. */
  private async checked(options: ScheduleOptions): Promise<ScheduleSpec> {
    const spec = toSpec(options)
    const { kind, definitionName, definitionVersion } = spec.start
    const ref = { kind, name: definitionName, version: definitionVersion ?? undefined }
    const definition = this.registry.resolve(ref)
    if (!definition) {
      throw new DefinitionNotFoundError(
        `schedule ${spec.name}: start names ${definitionLabel(ref)}, which is not registered`,
        { schedule: spec.name, kind, definitionName },
      )
    }
    if (!spec.start.inputFromCode) {
      await validateWith(definition.input, spec.start.input, `schedule ${spec.name} start.input`)
    }
    return spec
  }

  private noteInput(options: ScheduleOptions): void {
    const input = options.start?.input
    if (typeof input === 'function') this.inputs.set(options.name, input)
    else this.inputs.delete(options.name)
  }
}

const notFound = (name: string) =>
  new ScheduleNotFoundError(`schedule ${name} not found`, { schedule: name })

/** The options a stored spec was made from (an input function stays with its host). */
function optionsOf(spec: ScheduleSpec): ScheduleOptions {
  const options: ScheduleOptions = {
    name: spec.name,
    start: {
      kind: spec.start.kind,
      definitionName: spec.start.definitionName,
      ...(spec.start.definitionVersion !== null
        ? { definitionVersion: spec.start.definitionVersion }
        : {}),
      ...(spec.start.inputFromCode ? {} : { input: spec.start.input }),
    },
    timezone: spec.timezone,
    overlap: spec.overlap,
    catchUp: spec.catchUp,
    maxCatchUp: spec.maxCatchUp,
    jitterMs: spec.jitterMs,
  }
  if (spec.cron !== null) options.cron = spec.cron
  if (spec.every !== null) options.every = spec.every
  if (spec.description !== null) options.description = spec.description
  return options
}
