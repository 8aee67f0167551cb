import { defineSchedule } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'

const engineFor = enginesStoppedAfterEach()
const job = defineWorkflow({ name: 'job', nodes: { go: { run: () => 'ok' } } })

/** Berlin wall time of a tick run id (`sched:<name>:<ISO>`), for reading the assertions. */
const berlin = (runId: string) =>
  new Date(runId.split(':').slice(2).join(':')).toLocaleString('sv-SE', {
    timeZone: 'Europe/Berlin',
    timeZoneName: 'short',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  })

async function ticksThrough(from: string, hours: number) {
  const clock = manualClock(Date.parse(from))
  const start = { definition: job }
  const engine = engineFor({
    clock,
    modules: [workflow({ definitions: [job] })],
    schedules: [
      defineSchedule({ name: 'daily', cron: '30 2 * * *', timezone: 'Europe/Berlin', start }),
      defineSchedule({
        name: 'half-hourly',
        cron: '*/30 1-3 * * *',
        timezone: 'Europe/Berlin',
        overlap: 'allow',
        start,
      }),
    ],
  })
  await engine.ready()
  await clock.advance(hours * 3_600_000)
  const ids = (await engine.listRuns()).sort()
  const of = (name: string) =>
    ids
      .filter((id) => id.startsWith(`sched:${name}:`))
      .map((id) => [id.slice(name.length + 7), berlin(id)])
  return { daily: of('daily'), halfHourly: of('half-hourly') }
}

describe('schedules through the DST changes of Europe/Berlin (manual clock)', () => {
  it('spring forward (2025-03-30, 02:00 CET → 03:00 CEST): a tick in the skipped hour fires once, after it', async () => {
    const { daily, halfHourly } = await ticksThrough('2025-03-29T22:00:00Z', 6)
    expect(daily).toEqual([['2025-03-30T01:00:00.000Z', '2025-03-30 03:00:00 CEST']])
    expect(halfHourly).toEqual([
      ['2025-03-30T00:00:00.000Z', '2025-03-30 01:00:00 CET'],
      ['2025-03-30T00:30:00.000Z', '2025-03-30 01:30:00 CET'],
      ['2025-03-30T01:00:00.000Z', '2025-03-30 03:00:00 CEST'],
      ['2025-03-30T01:30:00.000Z', '2025-03-30 03:30:00 CEST'],
    ])
  })

  it('fall back (2025-10-26, 03:00 CEST → 02:00 CET): a fixed tick in the repeated hour fires once; intervals keep their real spacing', async () => {
    const { daily, halfHourly } = await ticksThrough('2025-10-25T22:00:00Z', 6)
    expect(daily).toEqual([['2025-10-26T00:30:00.000Z', '2025-10-26 02:30:00 CEST']])
    expect(halfHourly).toEqual([
      ['2025-10-25T23:00:00.000Z', '2025-10-26 01:00:00 CEST'],
      ['2025-10-25T23:30:00.000Z', '2025-10-26 01:30:00 CEST'],
      ['2025-10-26T00:00:00.000Z', '2025-10-26 02:00:00 CEST'],
      ['2025-10-26T00:30:00.000Z', '2025-10-26 02:30:00 CEST'],
      ['2025-10-26T01:00:00.000Z', '2025-10-26 02:00:00 CET'],
      ['2025-10-26T01:30:00.000Z', '2025-10-26 02:30:00 CET'],
      ['2025-10-26T02:00:00.000Z', '2025-10-26 03:00:00 CET'],
      ['2025-10-26T02:30:00.000Z', '2025-10-26 03:30:00 CET'],
    ])
    console.log(
      `SCORE schedules-dst daily-ticks=${daily.length} halfhourly-ticks=${halfHourly.length}`,
    )
  })
})
