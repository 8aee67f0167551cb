import { setTimeout as sleep } from 'node:timers/promises'
import { postgresStore } from 'skein/postgres'
import { afterEach, describe, expect, it } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'
import {
  call,
  killHost,
  type SchedHost,
  startSchedHost,
  stopSchedHosts,
  tickRuns,
} from './schedule-hosts.js'

// Schedules on three host processes sharing one Postgres schema (docs/schedules.md). Real
// processes, real clock: each test takes tens of seconds.
const hosts: SchedHost[] = []
afterEach(async () => {
  await stopSchedHosts(hosts.splice(0))
})

const tickStart = { kind: 'workflow', definitionName: 'tick' }
const fast = { pollMs: 200, leaseMs: 2000, graceMs: 3000 }

if (postgresAvailable('pg-schedule-hosts')) {
  const schemas = testSchemas('pg-schedule-hosts')
  const storeOf = (schema: string) =>
    postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 2 })

  describe('schedules on three Postgres hosts', () => {
    it('an every-second schedule for 20 s with kill -9 of a host at 8 s: every tick started exactly once, none early', async () => {
      const schema = schemas.next()
      const options = {
        schedules: [{ name: 'every-second', every: 1000, overlap: 'allow', start: tickStart }],
        scheduleOptions: fast,
      }
      for (const name of ['a', 'b', 'c']) hosts.push(await startSchedHost(name, schema, options))
      const from = Date.now()
      await sleep(8000)
      await killHost(hosts[0] as SchedHost)
      await sleep(12_000)
      const to = Date.now()
      await stopSchedHosts(hosts)
      const store = storeOf(schema)
      const runs = (await tickRuns(store, 'every-second')).filter(
        (r) => r.tick >= from + 2000 && r.tick <= to - 3000,
      )
      await store.close()
      const expected = Math.floor((to - 3000) / 1000) - Math.ceil((from + 2000) / 1000) + 1
      const missing = expected - runs.length
      const twice = runs.filter((r) => r.starts !== 1).length
      const early = runs.filter((r) => r.startedAt < r.tick).length
      const lateness = runs.map((r) => r.startedAt - r.tick).sort((x, y) => x - y)
      const p99 = lateness[Math.floor(lateness.length * 0.99)] ?? 0
      console.log(
        `SCORE schedules-3-hosts-kill9 ticks=${expected} started=${runs.length} missing=${missing} twice=${twice} early=${early} lateness-p50-ms=${lateness[Math.floor(lateness.length / 2)]} lateness-max-ms=${lateness[lateness.length - 1]} p99-ms=${p99}`,
      )
      expect({ missing, twice, early }).toEqual({ missing: 0, twice: 0, early: 0 })
      for (let i = 1; i < runs.length; i++) {
        expect((runs[i] as { tick: number }).tick - (runs[i - 1] as { tick: number }).tick).toBe(
          1000,
        )
      }
    }, 120_000)

    it('all hosts down across 5+ ticks, then one restarted: catchUp latest starts 1, all starts every missed tick, none 0', async () => {
      const schema = schemas.next()
      const schedule = (name: string, catchUp: string) => ({
        name,
        every: 1000,
        catchUp,
        overlap: 'allow',
        start: tickStart,
      })
      const options = {
        schedules: [schedule('latest', 'latest'), schedule('all', 'all'), schedule('none', 'none')],
        scheduleOptions: fast,
      }
      for (const name of ['a', 'b', 'c']) hosts.push(await startSchedHost(name, schema, options))
      await sleep(3000)
      for (const host of hosts) await killHost(host)
      const downAt = Date.now()
      await sleep(7000)
      const upAt = Date.now()
      const d = await startSchedHost('d', schema, options)
      hosts.push(d)
      await sleep(4000)
      const stateOf = async (name: string) =>
        (await call(d, 'GET', `/schedules/${name}`)).body.schedule.state
      const [latestState, allState, noneState] = [
        await stateOf('latest'),
        await stateOf('all'),
        await stateOf('none'),
      ]
      await stopSchedHosts(hosts)
      const store = storeOf(schema)
      const allRuns = await tickRuns(store, 'all')
      await store.close()
      // 'all' started every tick across the outage: no gap from its first tick to its last.
      let gaps = 0
      for (let i = 1; i < allRuns.length; i++) {
        if (
          (allRuns[i] as { tick: number }).tick - (allRuns[i - 1] as { tick: number }).tick !==
          1000
        )
          gaps++
      }
      const downTicks = noneState.missed
      const catchUps = (state: { recent: Array<{ reason: string }> }) =>
        state.recent.filter((r) => r.reason === 'catch-up').length
      // The ticks due while every host was down: each started, and only once a host was back
      // (how many ticks 'none' counts as missed also depends on how long the restart took).
      const downWindow = allRuns.filter((r) => r.tick >= downAt && r.tick < upAt)
      const allCaughtUp = downWindow.filter((r) => r.startedAt >= upAt).length
      console.log(
        `SCORE schedules-catchup down-ticks=${downTicks} latest=${catchUps(latestState)} all=${allCaughtUp} all-gaps=${gaps} none=${catchUps(noneState)} (down ${Math.round((Date.now() - downAt) / 1000)} s with restart)`,
      )
      expect(downTicks).toBeGreaterThanOrEqual(5)
      expect(catchUps(latestState)).toBe(1)
      expect(latestState.missed).toBe(downTicks - 1)
      expect(allState.missed).toBe(0)
      expect(gaps).toBe(0)
      expect(downWindow.length).toBeGreaterThanOrEqual(6)
      expect(allCaughtUp).toBe(downWindow.length)
      expect(catchUps(noneState)).toBe(0)
    }, 120_000)

    it('overlap skip never has two runs active; buffer-one queues at most one', async () => {
      const schema = schemas.next()
      const slow = { kind: 'workflow', definitionName: 'slow', input: { ms: 2500 } }
      const options = {
        schedules: [
          { name: 'skip', every: 1000, overlap: 'skip', start: slow },
          { name: 'buffer', every: 1000, overlap: 'buffer-one', start: slow },
        ],
        scheduleOptions: fast,
      }
      for (const name of ['a', 'b', 'c']) hosts.push(await startSchedHost(name, schema, options))
      await sleep(12_000)
      const info = async (name: string) =>
        (await call(hosts[1] as SchedHost, 'GET', `/schedules/${name}`)).body.schedule
      const skipInfo = await info('skip')
      const bufferInfo = await info('buffer')
      await stopSchedHosts(hosts)
      const store = storeOf(schema)
      const overlaps = async (name: string) => {
        const runs = (await tickRuns(store, name)).filter((r) => r.finishedAt !== null)
        let n = 0
        for (let i = 1; i < runs.length; i++) {
          if (
            (runs[i] as { startedAt: number }).startedAt <
            (runs[i - 1] as { finishedAt: number }).finishedAt
          )
            n++
        }
        return { runs: runs.length, overlaps: n }
      }
      const skip = await overlaps('skip')
      const buffer = await overlaps('buffer')
      await store.close()
      console.log(
        `SCORE schedules-overlap skip-runs=${skip.runs} skip-overlaps=${skip.overlaps} skipped=${skipInfo.state.skipped} buffer-runs=${buffer.runs} buffer-overlaps=${buffer.overlaps} buffer-skipped=${bufferInfo.state.skipped}`,
      )
      expect(skip.overlaps).toBe(0)
      expect(buffer.overlaps).toBe(0)
      expect(skipInfo.state.skipped).toBeGreaterThan(0)
      expect(buffer.runs).toBeGreaterThan(skip.runs - 1)
    }, 120_000)

    it('pause, resume, update and delete over HTTP on one host take effect on all hosts within one tick period', async () => {
      const schema = schemas.next()
      const options = { scheduleOptions: fast }
      for (const name of ['a', 'b', 'c']) hosts.push(await startSchedHost(name, schema, options))
      const [a, b, c] = hosts as [SchedHost, SchedHost, SchedHost]
      const created = await call(a, 'POST', '/schedules', {
        name: 'ops',
        every: 1000,
        overlap: 'allow',
        start: tickStart,
      })
      expect(created.status).toBe(201)
      await sleep(3000)
      const pausedAt = Date.now()
      expect((await call(b, 'POST', '/schedules/ops/pause')).status).toBe(200)
      await sleep(3000)
      const resumedAt = Date.now()
      expect((await call(c, 'POST', '/schedules/ops/resume')).status).toBe(200)
      await sleep(3000)
      const updatedAt = Date.now()
      expect((await call(a, 'POST', '/schedules/ops', { every: 2000 })).status).toBe(200)
      await sleep(5000)
      const deletedAt = Date.now()
      expect((await call(b, 'DELETE', '/schedules/ops')).status).toBe(200)
      await sleep(3000)
      await stopSchedHosts(hosts)
      const store = storeOf(schema)
      const runs = await tickRuns(store, 'ops')
      await store.close()
      const during = (from: number, to: number) => runs.filter((r) => r.tick > from && r.tick <= to)
      const whilePaused = during(pausedAt + 1000, resumedAt).length
      const afterResume = during(resumedAt + 1000, updatedAt).length
      const afterUpdate = during(updatedAt + 1000, deletedAt).map((r) => r.tick)
      const afterDelete = during(deletedAt + 1000, Number.POSITIVE_INFINITY).length
      console.log(
        `SCORE schedules-http-ops paused-ticks=${whilePaused} resumed-ticks=${afterResume} updated-ticks=${afterUpdate.length} deleted-ticks=${afterDelete}`,
      )
      expect(whilePaused).toBe(0)
      expect(afterResume).toBeGreaterThanOrEqual(1)
      expect(afterUpdate.length).toBeGreaterThanOrEqual(1)
      for (const tick of afterUpdate) expect(tick % 2000).toBe(0)
      expect(afterDelete).toBe(0)
    }, 120_000)
  })
}
