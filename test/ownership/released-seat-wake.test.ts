// A run this process let go when it parked on a timer is taken back by its wake without
// reading the lease first (the writer that released it was dropped meanwhile: runCacheSize 0).
// Should another process have taken the run since, the wake's commit is refused and the wake
// reads the lease and goes on from what the store holds: the timer fires once.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createEngine, defineEffect, defineModule, type WakeScheduler } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { leaseReadCountingStore } from '../support/lease-reads.js'
import { freshPath } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-released-seat-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let after = 0
const counted = defineModule({
  namespace: 'counted',
  effects: { after: defineEffect({ execute: async () => ++after }) },
})
const nap = defineWorkflow({
  name: 'nap',
  nodes: {
    nap: { run: (ctx) => ctx.sleep(150) },
    after: { after: ['nap'], run: (ctx) => ctx.invoke('counted.after', {}) },
  },
})

/** A scheduler that only records: the test wakes the run itself. */
function heldScheduler() {
  let wake: ((runId: string, dueAt: number) => Promise<unknown>) | undefined
  const scheduler: WakeScheduler = {
    start: (w) => {
      wake = w
    },
    schedule: () => {},
    cancel: () => {},
    stop: () => {},
  }
  return { scheduler, wake: (runId: string) => wake!(runId, Date.now()) }
}

describe('ownership: a due wake of a run this process let go', () => {
  it('takes the lease back without reading it', async () => {
    after = 0
    const { store, inner, reads } = leaseReadCountingStore(freshPath(dir, 'one.db'))
    const engine = createEngine({
      store,
      modules: [workflow({ definitions: [nap] }), counted],
      ownership: { owner: 'a', pollMs: 600_000 },
    })
    try {
      await engine.ready()
      await engine.start(nap, {}, { runId: 'r1' })
      expect((await inner.leases!.readLease('r1'))?.expiresAt).toBeLessThanOrEqual(Date.now())
      reads.length = 0
      await engine.result('r1', { timeoutMs: 10_000 })
      expect((await engine.getRun('r1')).status).toBe('completed')
      expect(reads).toEqual([])
      expect(after).toBe(1)
      expect((await inner.leases!.readLease('r1'))?.epoch).toBe(2)
    } finally {
      await engine.stop()
      await inner.close()
    }
  })

  it('another process took the run since: the commit is refused, the wake reads the lease and leaves the run to it', async () => {
    after = 0
    const { store, inner, reads } = leaseReadCountingStore(freshPath(dir, 'two.db'))
    const held = heldScheduler()
    const a = createEngine({
      store,
      modules: [workflow({ definitions: [nap] }), counted],
      scheduler: held.scheduler,
      ownership: { owner: 'a', pollMs: 600_000 },
    })
    try {
      await a.ready()
      await a.start(nap, {}, { runId: 'r2' })
      await sleep(200)
      // Another process claims the due run (its claim tick) and has not woken it yet.
      const now = Date.now()
      const claimed = await inner.leases!.claimDue('b', now, now + 60_000, 10)
      expect(claimed).toEqual([{ runId: 'r2', epoch: 2, nextDeadlineAt: expect.any(Number) }])
      reads.length = 0
      await held.wake('r2')
      expect(reads).toEqual(['r2'])
      expect(after).toBe(0)
      expect((await inner.read('r2')).some((e) => e.type.endsWith('timer.fired'))).toBe(false)
      expect((await inner.leases!.readLease('r2'))?.owner).toBe('b')
      // Let go by the other process: the next wake takes it (epoch 3) and the timer fires once.
      await inner.leases!.releaseLease('r2', 'b', 2)
      await held.wake('r2')
      await a.result('r2', { timeoutMs: 10_000 })
      expect(after).toBe(1)
      expect((await inner.read('r2')).filter((e) => e.type.endsWith('timer.fired'))).toHaveLength(1)
      expect((await inner.leases!.readLease('r2'))?.epoch).toBe(3)
    } finally {
      await a.stop()
      await inner.close()
    }
  })
})
