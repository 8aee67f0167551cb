// The kill loop's LEASE_LOST: a pass commits the run's lease released (nothing in
// flight, the next deadline a few ms away), the store is slow enough that the deadline falls
// due before the pass checks for more work, and this process's own `claimDue` tick runs in
// between: it sees the run due and its lease free, and claims it (epoch + 1). The pass then
// fires the due timer and commits again; that commit must count as taking the released lease
// back (epoch + 1 too, the same owner: the store accepts it whichever lands first), not as a
// renewal of the released epoch, which the store refuses after the operation already
// committed, so the caller saw LEASE_LOST.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createEngine, type EventStore } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { freshPath } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-own-claim-race-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const OWNER = 'race-host:1:test'
const LEASE_MS = 10_000

const napThenDone = defineWorkflow({
  name: 'napThenDone',
  nodes: {
    // Long enough that even a loaded machine commits the release before the timer is due (at
    // 15 ms a slow pass found the timer due already and never released the lease).
    nap: { run: (ctx) => ctx.sleep(400) },
    done: { after: ['nap'], run: () => 'done' },
  },
})

/**
 * A SQLite store whose first append that releases the lease returns only after the run's
 * next deadline passed and a claim of due runs (as the engine's own tick makes it) took the
 * run for `claimant` (by default the engine's own owner: the interleaving the kill loop hit by
 * chance, made certain; or another process's).
 */
function racingStore(path: string, claimant = OWNER) {
  const inner = sqliteStore({ path })
  const claims: Array<{ runId: string; epoch: number }> = []
  let armed = true
  const store: EventStore = {
    ...inner,
    append: async (runId, events, options) => {
      await inner.append(runId, events, options)
      const lease = options.lease
      const at = options.meta?.nextDeadlineAt
      if (!armed || !lease || lease.expiresAt > lease.now || typeof at !== 'number') return
      armed = false
      while (Date.now() <= at) await sleep(at - Date.now() + 1)
      const now = Date.now()
      claims.push(...(await inner.leases.claimDue(claimant, now, now + LEASE_MS, 32)))
    },
  }
  return { store, inner, claims }
}

describe('ownership: a released lease taken again by the same pass', () => {
  it('a commit after a release takes the lease back, racing its own claim tick', async () => {
    const { store, inner, claims } = racingStore(freshPath(dir, 'race.db'))
    const engine = createEngine({
      store,
      modules: [workflow({ definitions: [napThenDone] })],
      // The engine's own tick never runs here: the store above plays it at the worst moment.
      ownership: { owner: OWNER, leaseMs: LEASE_MS, pollMs: 600_000 },
    })
    try {
      await engine.ready()
      await engine.start(napThenDone, {}, { runId: 'race-1' })
      expect(claims).toEqual([{ runId: 'race-1', epoch: 2, nextDeadlineAt: expect.any(Number) }])
      expect((await engine.inspectRun('race-1')).status).toBe('completed')
      const lease = await inner.leases.readLease('race-1')
      expect(lease?.owner).toBe(OWNER)
      expect(lease?.epoch).toBe(2)
    } finally {
      await engine.stop()
      await inner.close()
    }
  })
})

describe('ownership: another process claims the run between two commits of one call', () => {
  it('the call resolves (its input is recorded once) and the run is left to the new owner', async () => {
    const other = 'other-host:2:test'
    const { store, inner } = racingStore(freshPath(dir, 'other.db'), other)
    const engine = createEngine({
      store,
      modules: [workflow({ definitions: [napThenDone] })],
      ownership: { owner: OWNER, leaseMs: LEASE_MS, pollMs: 600_000 },
    })
    try {
      await engine.ready()
      const started = await engine.start(napThenDone, {}, { runId: 'other-1' })
      const log = await inner.read('other-1')
      expect(log.filter((e) => e.type === 'runtime.run.started')).toHaveLength(1)
      // The state the call resolves with is what the store holds (the new owner goes on).
      expect(started.state.lastSeq).toBe(log.length)
      expect(started.state.status).toBe('running')
      const lease = await inner.leases.readLease('other-1')
      expect(lease?.owner).toBe(other)
    } finally {
      await engine.stop()
      await inner.close()
    }
  })
})
