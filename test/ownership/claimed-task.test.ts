// Claimed background work (src/runtime/ownership/claimed-task.ts): rounds run only while this
// process holds the claim, renew it while they run, never overlap, stop with the engine. Time is
// a manual clock here; the last test runs two registries on one SQLite file on the wall clock.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type ClaimStore, memoryStore } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { manualClock } from 'skein/testing'
import { describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/runtime/logger.js'
import { type ClaimedRound, ClaimedTasks } from '../../src/runtime/ownership/claimed-task.js'
import { systemClock } from '../../src/runtime/system.js'

/** Lets promise chains run (the manual clock fires timers; rounds finish on microtasks). */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
}

function setup() {
  const clock = manualClock()
  const claims = memoryStore().claims as ClaimStore
  const tasks = (owner: string, store = claims) =>
    new ClaimedTasks({ clock, claims: store, owner, log: silentLogger })
  /** Moves the clock `ms` (firing what falls due) and lets the rounds it started run. */
  const step = async (ms = 0) => {
    await clock.advance(ms)
    await settle()
  }
  return { clock, claims, tasks, step }
}

/** A round that records its epoch and what held() said, taking `ms` on the clock. */
function recorder(clock: ReturnType<typeof manualClock>, ms = 0) {
  const rounds: Array<{ epoch: number; at: number; held: boolean }> = []
  let running = 0
  let overlaps = 0
  const work = async ({ epoch, held, signal }: ClaimedRound) => {
    running++
    if (running > 1) overlaps++
    rounds.push({ epoch, at: clock.now(), held: held() })
    if (ms > 0) {
      await new Promise<void>((resolve) => {
        clock.setTimeout(resolve, ms)
        signal.addEventListener('abort', () => resolve())
      })
    }
    running--
  }
  return { rounds, work, overlaps: () => overlaps }
}

describe('claimed tasks', () => {
  it('runs rounds only while it holds the claim; another owner takes over with epoch + 1 after a stop', async () => {
    const { clock, claims, tasks, step } = setup()
    const a = recorder(clock)
    const b = recorder(clock)
    const taskA = tasks('A').start({
      name: 'sweep:x',
      intervalMs: 100,
      leaseMs: 1000,
      work: a.work,
    })
    await step()
    const taskB = tasks('B').start({
      name: 'sweep:x',
      intervalMs: 100,
      leaseMs: 1000,
      work: b.work,
    })
    for (let i = 0; i < 10; i++) {
      await step(100)
    }
    expect(a.rounds.length).toBe(11)
    expect(new Set(a.rounds.map((r) => r.epoch))).toEqual(new Set([1]))
    expect(b.rounds).toEqual([])
    expect([taskA.holding, taskB.holding]).toEqual([true, false])
    await taskA.stop()
    expect(await claims.read('sweep:x')).toMatchObject({ owner: 'A', epoch: 1, expiresAt: 0 })
    await step(100)
    expect(b.rounds).toEqual([{ epoch: 2, at: clock.now(), held: true }])
    await taskB.stop()
  })

  it('renews the claim while a long round runs: nobody takes it, held() stays true', async () => {
    const { clock, claims, tasks, step } = setup()
    let heldThroughout = true
    const task = tasks('A').start({
      name: 'schedule:long',
      intervalMs: 50,
      leaseMs: 300,
      work: async ({ held }) => {
        for (let t = 0; t < 20; t++) {
          await new Promise<void>((resolve) => clock.setTimeout(resolve, 100))
          heldThroughout &&= held()
        }
      },
    })
    const other = recorder(clock)
    const rival = tasks('B').start({
      name: 'schedule:long',
      intervalMs: 50,
      leaseMs: 300,
      work: other.work,
    })
    for (let i = 0; i < 40; i++) {
      await step(50)
    }
    expect(heldThroughout).toBe(true)
    expect(other.rounds).toEqual([])
    const stored = await claims.read('schedule:long')
    expect(stored).toMatchObject({ owner: 'A', epoch: 1 })
    expect(stored!.expiresAt).toBeGreaterThan(clock.now())
    await task.stop()
    await rival.stop()
  })

  it('never overlaps itself; a kick runs a round before the interval, or right after the running one', async () => {
    const { clock, tasks, step } = setup()
    const r = recorder(clock, 250)
    const task = tasks('A').start({
      name: 'slot:q:k',
      intervalMs: 100,
      leaseMs: 1000,
      work: r.work,
    })
    await step()
    for (let i = 0; i < 20; i++) {
      task.kick()
      await step(25)
    }
    expect(r.overlaps()).toBe(0)
    // Each 250 ms round is followed at once by the one a kick asked for.
    const gaps = r.rounds.slice(1).map((x, i) => x.at - r.rounds[i].at)
    expect(gaps.length).toBeGreaterThan(0)
    for (const gap of gaps) expect(gap).toBe(250)
    await task.stop()
    // Idle, a kick runs a round at once instead of after the interval.
    const idle = recorder(clock)
    const quick = tasks('A').start({
      name: 'slot:q:idle',
      intervalMs: 60_000,
      leaseMs: 1000,
      work: idle.work,
    })
    await step()
    expect(idle.rounds.length).toBe(1)
    quick.kick()
    await step()
    expect(idle.rounds.length).toBe(2)
    await quick.stop()
  })

  it('a claim it can no longer renew (the store fails past expiry) aborts the round; another owner takes it', async () => {
    const { clock, claims, tasks, step } = setup()
    let failing = false
    const flaky: ClaimStore = {
      ...claims,
      claim: (...args) =>
        failing ? Promise.reject(new Error('store down')) : claims.claim(...args),
    }
    let aborted: unknown
    const task = tasks('A', flaky).start({
      name: 'sweep:flaky',
      intervalMs: 100,
      leaseMs: 300,
      work: ({ signal }) =>
        new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => {
            aborted = signal.reason
            resolve()
          }),
        ),
    })
    await step()
    failing = true
    for (let i = 0; i < 6; i++) {
      await step(100)
    }
    expect(String(aborted)).toMatch(/claim sweep:flaky lost/)
    expect(task.holding).toBe(false)
    const b = recorder(clock)
    const rival = tasks('B').start({
      name: 'sweep:flaky',
      intervalMs: 100,
      leaseMs: 300,
      work: b.work,
    })
    await step()
    expect(b.rounds).toEqual([{ epoch: 2, at: clock.now(), held: true }])
    await task.stop()
    await rival.stop()
  })

  it('stop aborts the running round, waits for it, and lets the claim go; every task stops', async () => {
    const { claims, tasks, step } = setup()
    const registry = tasks('A')
    let finished = 0
    const work = ({ signal }: ClaimedRound) =>
      new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => {
          finished++
          resolve()
        }),
      )
    registry.start({ name: 'one', intervalMs: 100, leaseMs: 1000, work })
    registry.start({ name: 'two', intervalMs: 100, leaseMs: 1000, work })
    await step()
    await registry.stop()
    expect(finished).toBe(2)
    expect((await claims.list('')).map((c) => [c.name, c.expiresAt])).toEqual([
      ['one', 0],
      ['two', 0],
    ])
  })

  it('two registries on one SQLite file, wall clock: one works at a time, the other takes over', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-claimed-task-'))
    const path = join(dir, 'runs.db')
    const [storeA, storeB] = [sqliteStore({ path }), sqliteStore({ path })]
    try {
      let running = 0
      let overlaps = 0
      const epochs: Record<string, number[]> = { A: [], B: [] }
      const start = (owner: 'A' | 'B', store: typeof storeA) =>
        new ClaimedTasks({
          clock: systemClock,
          claims: store.claims,
          owner,
          log: silentLogger,
        }).start({
          name: 'sweep:retention',
          intervalMs: 20,
          leaseMs: 300,
          work: async ({ epoch }) => {
            if (++running > 1) overlaps++
            epochs[owner].push(epoch)
            await new Promise((resolve) => setTimeout(resolve, 5))
            running--
          },
        })
      const a = start('A', storeA)
      await until(() => epochs.A.length > 0)
      const b = start('B', storeB)
      await new Promise((resolve) => setTimeout(resolve, 400))
      expect(epochs.B).toEqual([])
      await a.stop()
      await until(() => epochs.B.length > 0)
      await b.stop()
      console.log(
        `SCORE claimed-task-sqlite rounds_a=${epochs.A.length} rounds_b=${epochs.B.length} overlaps=${overlaps}`,
      )
      expect(overlaps).toBe(0)
      expect(new Set(epochs.A)).toEqual(new Set([1]))
      expect(new Set(epochs.B)).toEqual(new Set([2]))
    } finally {
      await storeA.close()
      await storeB.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
