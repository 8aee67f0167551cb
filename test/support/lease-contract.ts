import type { EventStore, RunMeta } from 'skein'
import { makeEnvelopes } from 'skein/testing'
import { afterEach, describe, expect, it } from 'vitest'

const meta = (over: Partial<RunMeta> = {}): RunMeta => ({
  status: 'running',
  kind: 'workflow',
  definitionName: 'demo',
  definitionVersion: '1',
  createdAt: 1000,
  updatedAt: 1000,
  nextDeadlineAt: null,
  ...over,
})

async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the call to reject, but it resolved')
}

/**
 * The lease port on two store instances over one database: what one process
 * writes, the other sees and is fenced by. `openPair` returns two fresh stores sharing a new,
 * empty database; `cleanup` runs after both are closed.
 */
export function describeLeaseContract(
  name: string,
  openPair: () => Promise<[EventStore, EventStore]>,
  cleanup: (a: EventStore) => unknown = () => {},
): void {
  describe(`lease contract: ${name}`, () => {
    const opened: Array<[EventStore, EventStore]> = []
    const pair = async () => {
      const stores = await openPair()
      opened.push(stores)
      expect(stores[0].leases).toBeDefined()
      expect(stores[1].leases).toBeDefined()
      return stores
    }
    afterEach(async () => {
      for (const [a, b] of opened.splice(0)) {
        await a.close?.()
        await b.close?.()
        await cleanup(a)
      }
    })

    it('an append takes the lease of a new run and the other instance reads it', async () => {
      const [a, b] = await pair()
      expect(await b.leases!.readLease('r1')).toBeNull()
      await a.append('r1', makeEnvelopes('r1', 1, 2), {
        expectedSeq: 0,
        meta: meta(),
        lease: { owner: 'A', epoch: 1, expiresAt: 5000, now: 1000 },
      })
      expect(await b.leases!.readLease('r1')).toEqual({
        runId: 'r1',
        owner: 'A',
        epoch: 1,
        expiresAt: 5000,
      })
    })

    it('refuses a take-over of a live lease and an append from a stale epoch, writing nothing', async () => {
      const [a, b] = await pair()
      await a.append('r1', makeEnvelopes('r1', 1, 1), {
        expectedSeq: 0,
        meta: meta(),
        lease: { owner: 'A', epoch: 1, expiresAt: 5000, now: 1000 },
      })
      // B tries to take the live lease.
      const live = await rejection(
        b.append('r1', makeEnvelopes('r1', 2, 1), {
          expectedSeq: 1,
          meta: meta({ status: 'completed' }),
          lease: { owner: 'B', epoch: 2, expiresAt: 9000, now: 2000 },
        }),
      )
      expect(live.code).toBe('LEASE_LOST')
      // After expiry B takes over with epoch 2 ...
      await b.append('r1', makeEnvelopes('r1', 2, 1), {
        expectedSeq: 1,
        lease: { owner: 'B', epoch: 2, expiresAt: 12_000, now: 6000 },
      })
      // ... and A, paused past its lease, is fenced even with the right tail.
      const stale = await rejection(
        a.append('r1', makeEnvelopes('r1', 3, 1), {
          expectedSeq: 2,
          meta: meta({ status: 'completed' }),
          lease: { owner: 'A', epoch: 1, expiresAt: 13_000, now: 7000 },
        }),
      )
      expect(stale.code).toBe('LEASE_LOST')
      // A stale claim with a seq conflict too hears LEASE_LOST (the owner question first).
      const both = await rejection(
        a.append('r1', makeEnvelopes('r1', 2, 1), {
          expectedSeq: 1,
          lease: { owner: 'A', epoch: 1, expiresAt: 13_000, now: 7000 },
        }),
      )
      expect(both.code).toBe('LEASE_LOST')
      expect((await b.read('r1')).map((e) => e.id)).toEqual(['r1-e1', 'r1-e2'])
      expect(await a.tail('r1')).toBe(2)
      const [summary] = (await b.listSummaries!({ limit: 10 })).runs
      expect(summary.status).toBe('running')
      expect(await a.leases!.readLease('r1')).toMatchObject({ owner: 'B', epoch: 2 })
      // An append without a claim (one process, no ownership) is not fenced.
      await a.append('r1', makeEnvelopes('r1', 3, 1), { expectedSeq: 2 })
      expect(await b.tail('r1')).toBe(3)
    })

    it('a take-over must bump the epoch', async () => {
      const [a, b] = await pair()
      await a.append('r1', makeEnvelopes('r1', 1, 1), {
        expectedSeq: 0,
        lease: { owner: 'A', epoch: 3, expiresAt: 2000, now: 1000 },
      })
      const same = await rejection(
        b.leases!.renewLease('r1', { owner: 'B', epoch: 3, expiresAt: 9000, now: 5000 }),
      )
      expect(same.code).toBe('LEASE_LOST')
      expect(
        await b.leases!.renewLease('r1', { owner: 'B', epoch: 4, expiresAt: 9000, now: 5000 }),
      ).toEqual({ runId: 'r1', owner: 'B', epoch: 4, expiresAt: 9000 })
    })

    it('renews, releases, and a released run can be taken at once', async () => {
      const [a, b] = await pair()
      await a.leases!.renewLease('r1', { owner: 'A', epoch: 1, expiresAt: 2000, now: 1000 })
      await a.leases!.renewLease('r1', { owner: 'A', epoch: 1, expiresAt: 8000, now: 1900 })
      expect(await b.leases!.readLease('r1')).toMatchObject({ owner: 'A', expiresAt: 8000 })
      const early = await rejection(
        b.leases!.renewLease('r1', { owner: 'B', epoch: 2, expiresAt: 9000, now: 3000 }),
      )
      expect(early.code).toBe('LEASE_LOST')
      // A release by a stale holder does nothing.
      await b.leases!.releaseLease('r1', 'A', 0)
      expect(await b.leases!.readLease('r1')).toMatchObject({ owner: 'A', expiresAt: 8000 })
      await a.leases!.releaseLease('r1', 'A', 1)
      const released = await b.leases!.readLease('r1')
      expect(released).toMatchObject({ owner: 'A', epoch: 1 })
      expect(released!.expiresAt).toBeLessThanOrEqual(3000)
      await b.leases!.renewLease('r1', { owner: 'B', epoch: 2, expiresAt: 9000, now: 3000 })
      // The old holder cannot renew after the take-over, not even past the new expiry.
      const old = await rejection(
        a.leases!.renewLease('r1', { owner: 'A', epoch: 1, expiresAt: 20_000, now: 10_000 }),
      )
      expect(old.code).toBe('LEASE_LOST')
      // A renewal leaves the log alone; the run still has no events.
      expect(await a.tail('r1')).toBe(0)
      expect(await a.listRuns()).toEqual([])
    })

    it('an append releases the run when its claim expires at once (expiresAt <= now)', async () => {
      const [a, b] = await pair()
      await a.append('r1', makeEnvelopes('r1', 1, 1), {
        expectedSeq: 0,
        meta: meta(),
        lease: { owner: 'A', epoch: 1, expiresAt: 5000, now: 1000 },
      })
      await a.append('r1', makeEnvelopes('r1', 2, 1), {
        expectedSeq: 1,
        meta: meta({ status: 'running', nextDeadlineAt: 9000 }),
        lease: { owner: 'A', epoch: 1, expiresAt: 1500, now: 1500 },
      })
      await b.leases!.renewLease('r1', { owner: 'B', epoch: 2, expiresAt: 9000, now: 1600 })
    })

    it('claimDue hands each due run to one claimer, skips live leases and bumps epochs', async () => {
      const [a, b] = await pair()
      const ids = Array.from({ length: 40 }, (_, i) => `due-${i}`)
      for (const id of ids) {
        await a.append(id, makeEnvelopes(id, 1, 1), {
          expectedSeq: 0,
          meta: meta({ nextDeadlineAt: 1000 }),
        })
      }
      await a.append('later', makeEnvelopes('later', 1, 1), {
        expectedSeq: 0,
        meta: meta({ nextDeadlineAt: 99_000 }),
      })
      await a.append('owned', makeEnvelopes('owned', 1, 1), {
        expectedSeq: 0,
        meta: meta({ nextDeadlineAt: 1000 }),
        lease: { owner: 'A', epoch: 1, expiresAt: 50_000, now: 1000 },
      })
      const claims = await Promise.all([
        ...Array.from({ length: 4 }, () => a.leases!.claimDue('A', 2000, 30_000, 7)),
        ...Array.from({ length: 4 }, () => b.leases!.claimDue('B', 2000, 30_000, 7)),
      ])
      const again = await b.leases!.claimDue('B', 2000, 30_000, 100)
      const all = [...claims.flat(), ...again]
      const claimed = all.map((c) => c.runId).sort()
      expect(claimed).toEqual([...ids].sort())
      for (const c of all) {
        expect(c.epoch).toBe(1)
        expect(c.nextDeadlineAt).toBe(1000)
      }
      // Nothing is due for anyone now: the claims are live.
      expect(await a.leases!.claimDue('A', 3000, 30_000, 100)).toEqual([])
      // Once they expire, the next claim takes them with the next epoch.
      const later = await a.leases!.claimDue('A', 31_000, 60_000, 100)
      expect(later.length).toBe(40)
      expect(new Set(later.map((c) => c.epoch))).toEqual(new Set([2]))
      const lease = await b.leases!.readLease(later[0].runId)
      expect(lease).toMatchObject({ owner: 'A', epoch: 2, expiresAt: 60_000 })
    })

    it('appends racing from two instances with two claims: exactly one owner writes', async () => {
      const [a, b] = await pair()
      await a.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0, meta: meta() })
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) => {
          const store = i % 2 === 0 ? a : b
          const owner = i % 2 === 0 ? 'A' : 'B'
          return store.append('r1', makeEnvelopes('r1', 2, 1), {
            expectedSeq: 1,
            lease: { owner, epoch: 1, expiresAt: 9000, now: 1000 },
          })
        }),
      )
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
      for (const r of results) {
        if (r.status === 'rejected')
          expect(['LEASE_LOST', 'SEQ_CONFLICT']).toContain((r.reason as any).code)
      }
      expect(await b.tail('r1')).toBe(2)
    })
  })
}
