import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bearerAuth } from 'skein'
import { type ActorHost, cellFileName, createActorHost, sqliteRegistry } from 'skein/actor'
import { manualClock } from 'skein/testing'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { actorModules, nap } from './actor-workload.js'

const dirs: string[] = []
const hosts: ActorHost[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.stop()
})
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'skein-actor-'))
  dirs.push(dir)
  return dir
}
const track = (host: ActorHost) => {
  hosts.push(host)
  return host
}

async function call(host: ActorHost, method: string, path: string, body?: unknown, headers = {}) {
  const init: RequestInit = { method, headers }
  if (body !== undefined) {
    init.body = JSON.stringify(body)
    init.headers = { 'content-type': 'application/json', ...headers }
  }
  const res = await host.fetch(new Request(`http://actor.test${path}`, init))
  if (!res) throw new Error(`${method} ${path}: not answered`)
  return { status: res.status, body: (await res.json()) as any }
}

const start = (host: ActorHost, runId: string, ms = 60_000, headers = {}) =>
  call(
    host,
    'POST',
    '/runs',
    { kind: 'workflow', definitionName: 'nap', runId, input: { ms } },
    headers,
  )

describe('actor host', () => {
  it('records each new run in the registry with the caller identity, definition and time', async () => {
    const clock = manualClock()
    const host = track(
      createActorHost({
        modules: actorModules(),
        dir: tempDir(),
        clock,
        authorize: bearerAuth({ write: 'w-token' }),
      }),
    )
    const created = await start(host, 'r-1', 60_000, { authorization: 'Bearer w-token' })
    expect(created.status).toBe(200)
    // A retried start (same runId, same input) keeps the first record.
    await clock.advance(5)
    expect((await start(host, 'r-1', 60_000, { authorization: 'Bearer w-token' })).status).toBe(200)
    const page = await host.registry.list()
    expect(page.runs).toEqual([
      {
        runId: 'r-1',
        owner: { token: 'write' },
        kind: 'workflow',
        definitionName: 'nap',
        definitionVersion: nap.version,
        createdAt: clock.now() - 5,
      },
    ])
  })

  it('answers the listings from the run registry', async () => {
    const host = track(createActorHost({ modules: actorModules() }))
    expect((await start(host, 'l-1')).status).toBe(200)
    const runs = await call(host, 'GET', '/runs')
    expect(runs.status).toBe(200)
    expect(runs.body.runIds).toEqual(['l-1'])
    const summaries = await call(host, 'GET', '/runs/summaries')
    expect(summaries.status).toBe(200)
    expect(summaries.body.runs.map((r: { runId: string }) => r.runId)).toEqual(['l-1'])
  })

  it('a refused start leaves no cell file and no registry entry; a read never creates one', async () => {
    const dir = tempDir()
    const host = track(createActorHost({ modules: actorModules(), dir }))
    const refused = await call(host, 'POST', '/runs', {
      kind: 'workflow',
      definitionName: 'missing',
      runId: 'r-x',
    })
    expect(refused.status).toBe(404)
    expect((await call(host, 'GET', '/runs/r-y')).status).toBe(404)
    expect((await call(host, 'POST', '/runs/r-y/events', { events: [{ type: 'x' }] })).status).toBe(
      404,
    )
    expect(readdirSync(join(dir, 'runs'))).toEqual([])
    expect((await host.registry.list()).runs).toEqual([])
  })

  it('keeps at most maxOpenCells cells open; every run stays readable', async () => {
    const dir = tempDir()
    const host = track(createActorHost({ modules: actorModules(), dir, maxOpenCells: 8 }))
    let most = 0
    for (let i = 0; i < 40; i++) {
      expect((await start(host, `b-${i}`)).status).toBe(200)
      most = Math.max(most, host.openCells())
    }
    expect(most).toBeLessThanOrEqual(8)
    for (let i = 0; i < 40; i += 7) {
      const res = await call(host, 'GET', `/runs/b-${i}`)
      expect(res.body.state.status).toBe('running')
      expect(host.openCells()).toBeLessThanOrEqual(8)
    }
    expect(existsSync(join(dir, 'runs', cellFileName('b-39')))).toBe(true)
  })

  it('closes an idle cell with its deadline in the registry and opens it again in time', async () => {
    const clock = manualClock()
    const dir = tempDir()
    const host = track(
      createActorHost({ modules: actorModules(), dir, clock, idleTimeoutMs: 1000, sweepMs: 100 }),
    )
    await host.recovered
    await start(host, 't-1', 60_000)
    expect(host.openCells()).toBe(1)
    await clock.advance(1500)
    await until(() => host.openCells() === 0)
    // Opened again shortly before the deadline (not earlier than needed), fired once, at it.
    await clock.advance(50_000)
    expect(host.openCells()).toBe(0)
    await clock.advance(7_000)
    expect(host.openCells()).toBe(1)
    await clock.advance(2_000)
    const events = (await call(host, 'GET', '/runs/t-1/events')).body.events as any[]
    const set = events.filter((e) => e.type === 'runtime.timer.set')
    const fired = events.filter((e) => e.type === 'runtime.timer.fired')
    expect(fired).toHaveLength(1)
    expect(fired[0].ts).toBeGreaterThanOrEqual(set[0].payload.at)
    expect(events.at(-1).type).toBe('runtime.run.completed')
  })

  it('after a restart on the same directory, opens the runs whose timers are due', async () => {
    const clock = manualClock()
    const dir = tempDir()
    const first = createActorHost({ modules: actorModules(), dir, clock })
    await start(first, 'd-1', 10_000)
    await start(first, 'd-2', 600_000)
    await first.stop()
    await clock.advance(20_000)
    const second = track(createActorHost({ modules: actorModules(), dir, clock, sweepMs: 100 }))
    // d-1 is due: opened at boot; d-2 is not: its cell stays closed.
    expect(await second.recovered).toBe(1)
    expect(second.openCells()).toBe(1)
    await clock.advance(10)
    await until(
      async () => (await call(second, 'GET', '/runs/d-1')).body.state.status === 'completed',
    )
    expect((await call(second, 'GET', '/runs/d-2')).body.state.status).toBe('running')
  })
})

describe('actor host: POST /operations/deadlines/rescan (procedure 2)', () => {
  it('rebuilds deadlines from every registered run when the registry lost them', async () => {
    const clock = manualClock()
    const dir = tempDir()
    const first = createActorHost({ modules: actorModules(), dir, clock })
    await start(first, 'lost-1', 10_000)
    await first.stop()
    // A registry restored from an older backup: it no longer knows the run's deadline.
    const restored = sqliteRegistry({ path: join(dir, 'registry.db') })
    await restored.setWake('lost-1', null)
    await restored.close?.()
    const authorize = bearerAuth({ operations: 'ops' })
    const second = track(
      createActorHost({ modules: actorModules(), dir, clock, authorize, sweepMs: 100 }),
    )
    expect(await second.recovered).toBe(0)
    expect(second.openCells()).toBe(0)
    const rescan = await call(second, 'POST', '/operations/deadlines/rescan', undefined, {
      authorization: 'Bearer ops',
    })
    expect(rescan).toEqual({ status: 200, body: { scheduled: 1 } })
    await clock.advance(10_000)
    await until(
      async () => (await call(second, 'GET', '/runs/lost-1')).body.state.status === 'completed',
    )
  })
})

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('actor host: DELETE /runs/:id (docs/data-lifecycle.md)', () => {
  it('deletes the cell file and the registry entry; an unfinished run needs force', async () => {
    const dir = tempDir()
    const authorize = bearerAuth({ operations: 'ops' })
    const host = track(createActorHost({ modules: actorModules(), dir, authorize }))
    const ops = { authorization: 'Bearer ops' }
    expect((await start(host, 'gone-1', 60_000, ops)).status).toBe(200)
    const cell = join(dir, 'runs', cellFileName('gone-1'))
    expect(existsSync(cell)).toBe(true)
    const refused = await call(host, 'DELETE', '/runs/gone-1', undefined, ops)
    expect(refused.body.error.code).toBe('RUN_NOT_FINISHED')
    expect(existsSync(cell)).toBe(true)
    const deleted = await call(host, 'DELETE', '/runs/gone-1?force=true', undefined, ops)
    expect(deleted.body.deleted).toMatchObject({ runId: 'gone-1', status: 'running' })
    expect(readdirSync(join(dir, 'runs'))).toEqual([])
    expect((await host.registry.list()).runs).toEqual([])
    expect((await call(host, 'GET', '/runs/gone-1', undefined, ops)).status).toBe(404)
  })
})
