import { defineSchedule, memoryStore } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'

const engineFor = enginesStoppedAfterEach()
const T0 = Date.UTC(2025, 0, 1, 0, 0, 0)

const sweep = defineWorkflow({
  name: 'sweep',
  nodes: { go: { run: ({ input }) => ({ swept: input ?? null }) } },
})
const parked = defineWorkflow({
  name: 'parked',
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.done') } },
})
const modules = [workflow({ definitions: [sweep, parked] })]

async function runIds(engine: ReturnType<typeof engineFor>, prefix = 'sched:') {
  return (await engine.listRuns()).filter((id) => id.startsWith(prefix)).sort()
}

describe('schedules (one process, manual clock)', () => {
  it('starts one run per tick, named by the schedule and the tick, never before the tick', async () => {
    const clock = manualClock(T0 + 500)
    const engine = engineFor({
      clock,
      modules,
      schedules: [
        defineSchedule({
          name: 'minutely',
          every: 60_000,
          start: { definition: sweep, input: ({ at }) => ({ at }) },
        }),
      ],
    })
    await engine.ready()
    await clock.advance(59_000)
    expect(await runIds(engine)).toEqual([])
    await clock.advance(1_000)
    await clock.advance(120_000)
    const ids = await runIds(engine)
    expect(ids).toEqual([
      'sched:minutely:2025-01-01T00:01:00.000Z',
      'sched:minutely:2025-01-01T00:02:00.000Z',
      'sched:minutely:2025-01-01T00:03:00.000Z',
    ])
    const run = await engine.getRun(ids[0] as string)
    expect(run.output).toEqual({ go: { swept: { at: T0 + 60_000 } } })
    const info = await engine.schedules.get('minutely')
    expect(info.state.started).toBe(3)
    expect(info.nextFireAt).toBe(T0 + 240_000)
    expect(info.upcoming).toHaveLength(5)
  })

  it('refuses bad schedules with a clear error and writes nothing', async () => {
    const clock = manualClock(T0)
    const engine = engineFor({ clock, modules })
    const base = { start: { definition: sweep } }
    const refused = async (options: object) =>
      engine.schedules.create({ name: 'bad', ...base, ...options } as never).then(
        () => 'created',
        (error) => `${error.code}: ${error.message}`,
      )
    expect(await refused({ cron: '61 * * * *' })).toMatch(/^INVALID_SCHEDULE: .*cron.*minute/)
    expect(await refused({ cron: '* * *' })).toMatch(/INVALID_SCHEDULE: .*3 field/)
    expect(await refused({ cron: '0 9 * * *', timezone: 'Mars/Olympus' })).toMatch(
      /INVALID_SCHEDULE: .*timezone/,
    )
    expect(await refused({ cron: '0 9 * * *', every: 60_000 })).toMatch(/exactly one of cron/)
    expect(await refused({})).toMatch(/exactly one of cron/)
    expect(
      await refused({ every: 60_000, start: { kind: 'workflow', definitionName: 'nope' } }),
    ).toMatch(/^DEFINITION_NOT_FOUND: /)
    expect(await refused({ every: 60_000, overlap: 'sometimes' })).toMatch(/overlap must be/)
    expect(await engine.schedules.list()).toEqual([])
    await engine.schedules.create({ name: 'ok', every: 60_000, ...base })
    expect(
      await engine.schedules
        .create({ name: 'ok', every: 120_000, ...base })
        .catch((error) => error.code),
    ).toBe('SCHEDULE_EXISTS')
    expect((await engine.schedules.get('ok')).spec.every).toBe(60_000)
    expect(await engine.schedules.get('missing').catch((error) => error.code)).toBe(
      'SCHEDULE_NOT_FOUND',
    )
  })

  it('overlap skip never has two runs active; buffer-one queues one and starts it after', async () => {
    const clock = manualClock(T0)
    const engine = engineFor({ clock, modules })
    await engine.schedules.create({
      name: 'skip',
      every: 60_000,
      start: { definition: parked },
    })
    await engine.schedules.create({
      name: 'buffer',
      every: 60_000,
      overlap: 'buffer-one',
      start: { definition: parked },
    })
    await clock.advance(5 * 60_000)
    expect(await runIds(engine, 'sched:skip:')).toEqual(['sched:skip:2025-01-01T00:01:00.000Z'])
    expect(await runIds(engine, 'sched:buffer:')).toEqual(['sched:buffer:2025-01-01T00:01:00.000Z'])
    const buffer = await engine.schedules.get('buffer')
    expect(buffer.state.buffered).toBe(T0 + 120_000)
    expect(buffer.state.skipped).toBe(3)
    expect((await engine.schedules.get('skip')).state.skipped).toBe(4)
    await engine.signal('sched:buffer:2025-01-01T00:01:00.000Z', [{ type: 'app.done' }])
    await clock.advance(1_000)
    expect(await runIds(engine, 'sched:buffer:')).toEqual([
      'sched:buffer:2025-01-01T00:01:00.000Z',
      'sched:buffer:2025-01-01T00:02:00.000Z',
    ])
  })

  it('pause skips ticks, resume goes on from the next one, update retimes, delete stops', async () => {
    const clock = manualClock(T0)
    const engine = engineFor({ clock, modules })
    await engine.schedules.create({ name: 'p', every: 60_000, start: { definition: sweep } })
    await clock.advance(60_000)
    await engine.schedules.pause('p')
    await clock.advance(180_000)
    expect(await runIds(engine)).toHaveLength(1)
    await engine.schedules.resume('p')
    await clock.advance(60_000)
    expect(await runIds(engine)).toHaveLength(2)
    const updated = await engine.schedules.update('p', { cron: '0 0 * * *' })
    expect(updated.spec.every).toBeNull()
    expect(updated.nextFireAt).toBe(Date.UTC(2025, 0, 2))
    await engine.schedules.delete('p')
    await clock.advance(86_400_000)
    expect(await runIds(engine)).toHaveLength(2)
  })

  it('trigger starts a run now; backfill starts the ticks of a range once', async () => {
    const clock = manualClock(T0)
    const engine = engineFor({ clock, modules })
    await engine.schedules.create({ name: 'b', every: 60_000, start: { definition: sweep } })
    const triggered = await engine.schedules.trigger('b')
    expect(triggered.runId).toBe('sched:b:manual:2025-01-01T00:00:00.000Z')
    expect(triggered.state?.status).toBe('completed')
    const first = await engine.schedules.backfill('b', { from: T0 - 180_000, to: T0 - 60_000 })
    expect(first.runIds).toEqual([
      'sched:b:2024-12-31T23:57:00.000Z',
      'sched:b:2024-12-31T23:58:00.000Z',
      'sched:b:2024-12-31T23:59:00.000Z',
    ])
    expect(first.existing).toBe(0)
    const again = await engine.schedules.backfill('b', { from: T0 - 180_000, to: T0 })
    expect(again.existing).toBe(3)
    expect(again.runIds).toHaveLength(4)
    expect(await runIds(engine)).toHaveLength(5)
  })

  it('catchUp after an outage: latest starts 1, all starts 5, none starts 0', async () => {
    const store = memoryStore()
    const clock = manualClock(T0)
    const options = { scheduleOptions: { graceMs: 10_000 } }
    const first = engineFor({ clock, modules, store, ...options })
    for (const catchUp of ['latest', 'all', 'none'] as const) {
      await first.schedules.create({
        name: catchUp,
        every: 60_000,
        catchUp,
        overlap: 'allow',
        start: { definition: sweep },
      })
    }
    await clock.advance(60_000)
    expect(await runIds(first)).toHaveLength(3)
    await first.stop()
    await clock.advance(5 * 60_000 + 30_000)
    const second = engineFor({ clock, modules, store, ...options })
    await second.ready()
    await clock.advance(1)
    expect(await runIds(second, 'sched:latest:')).toHaveLength(2)
    expect(await runIds(second, 'sched:all:')).toHaveLength(6)
    expect(await runIds(second, 'sched:none:')).toHaveLength(1)
    expect((await second.schedules.get('none')).state.missed).toBe(5)
    expect((await second.schedules.get('latest')).state.missed).toBe(4)
  })
})
