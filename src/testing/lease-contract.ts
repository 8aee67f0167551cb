import { describe, expect, it } from 'vitest'
import { LeaseLostError } from '../core/errors.js'
import type { EventStore, LeaseClaim, LeaseStore, RunMeta } from '../core/ports.js'
import { leaseRuleCases } from './lease-rule-cases.js'
import { makeEnvelopes } from './make-envelopes.js'
import { openedPerTest } from './opened-per-test.js'
import { rejection } from './rejection.js'

/** Two handles on one database (two processes' stores); the memory store passes itself twice. */
export interface StorePair {
  a: EventStore
  b: EventStore
  /** Closes both handles and removes what the pair made (files, schemas). */
  close(): unknown
}

const T0 = 1_700_000_000_000
const meta = (nextDeadlineAt: number | null): RunMeta => ({
  status: 'running',
  kind: 'workflow',
  definitionName: 'demo',
  definitionVersion: '1',
  createdAt: T0,
  updatedAt: T0,
  nextDeadlineAt,
})
const claim = (owner: string, epoch: number, now: number, ttl = 1000): LeaseClaim => ({
  owner,
  epoch,
  expiresAt: now + ttl,
  now,
})

const leasesOf = (store: EventStore): LeaseStore => {
  if (!store.leases) throw new Error('the store under test has no `leases`')
  return store.leases
}

/**
 * The lease contract (docs/storage.md): what `EventStore.leases` and `AppendOptions.lease` promise,
 * proven with two store handles on one database, so a claim written through one is fenced by
 * the other. Time is data here: every claim carries its `now`, nothing sleeps. Every way the
 * store checks a claim is held to the claim rule's table of cases (`decideClaim`).
 *
 * @example
 * describeLeaseStore('sqlite', () => {
 *   const path = freshPath()
 *   const a = sqliteStore({ path })
 *   const b = sqliteStore({ path })
 *   return { a, b, close: async () => { await a.close(); await b.close() } }
 * })
 */
export function describeLeaseStore(
  name: string,
  makePair: () => StorePair | Promise<StorePair>,
): void {
  describe(`LeaseStore contract: ${name}`, () => {
    const open = openedPerTest(makePair, (pair) => pair.close())

    // Every store's statements of the claim rule (`decideClaim`) answer its table of cases.
    leaseRuleCases(open)

    it('takes a free lease with an append, and a take-over after expiry bumps the epoch', async () => {
      const { a, b } = await open()
      await a.append('r1', makeEnvelopes('r1', 1, 2), {
        expectedSeq: 0,
        meta: meta(null),
        lease: claim('A', 1, T0),
      })
      expect(await leasesOf(b).readLease('r1')).toEqual({
        runId: 'r1',
        owner: 'A',
        epoch: 1,
        expiresAt: T0 + 1000,
      })
      // Live: B cannot take it, whatever epoch it claims, and nothing is written.
      const early = await rejection(
        b.append('r1', makeEnvelopes('r1', 3, 1), {
          expectedSeq: 2,
          lease: claim('B', 2, T0 + 999),
        }),
      )
      expect(LeaseLostError.is(early)).toBe(true)
      expect(await b.tail('r1')).toBe(2)
      // Expired: B takes it over with the stored epoch + 1.
      await b.append('r1', makeEnvelopes('r1', 3, 1), {
        expectedSeq: 2,
        lease: claim('B', 2, T0 + 1000),
      })
      expect(await leasesOf(a).readLease('r1')).toMatchObject({ owner: 'B', epoch: 2 })
    })

    it('refuses an append from a stale epoch and writes nothing (events, meta, lease)', async () => {
      const { a, b } = await open()
      await a.append('r1', makeEnvelopes('r1', 1, 1), {
        expectedSeq: 0,
        meta: meta(null),
        lease: claim('A', 1, T0),
      })
      await b.append('r1', makeEnvelopes('r1', 2, 1), {
        expectedSeq: 1,
        meta: meta(null),
        lease: claim('B', 2, T0 + 5000),
      })
      // A wakes from a pause with its old epoch and the tail it last saw moved on; even with
      // the right tail its epoch is refused.
      const stale = await rejection(
        a.append('r1', makeEnvelopes('r1', 3, 1), {
          expectedSeq: 2,
          meta: { ...meta(T0 + 1), status: 'failed' },
          lease: claim('A', 1, T0 + 5001),
        }),
      )
      expect(LeaseLostError.is(stale)).toBe(true)
      expect((stale as { details?: unknown }).details).toMatchObject({
        runId: 'r1',
        storedEpoch: 2,
      })
      expect(await a.tail('r1')).toBe(2)
      expect((await b.read('r1')).map((e) => e.seq)).toEqual([1, 2])
      expect(await leasesOf(a).readLease('r1')).toMatchObject({ owner: 'B', epoch: 2 })
      // The meta was not written either: no deadline appeared.
      expect(await leasesOf(a).claimDue('C', T0 + 10_000_000, T0 + 10_001_000, 10)).toEqual([])
      // A cannot take the lease back with the epoch it holds, even once B's lapsed.
      const reclaim = await rejection(leasesOf(a).renewLease('r1', claim('A', 2, T0 + 100_000)))
      expect(LeaseLostError.is(reclaim)).toBe(true)
    })

    it('renews the holder’s lease without appending; others see the new expiry', async () => {
      const { a, b } = await open()
      await a.append('r1', makeEnvelopes('r1', 1, 1), {
        expectedSeq: 0,
        lease: claim('A', 1, T0),
      })
      const renewed = await leasesOf(a).renewLease('r1', claim('A', 1, T0 + 900, 1000))
      expect(renewed).toEqual({ runId: 'r1', owner: 'A', epoch: 1, expiresAt: T0 + 1900 })
      expect(await leasesOf(b).readLease('r1')).toMatchObject({ expiresAt: T0 + 1900 })
      const taken = await rejection(leasesOf(b).renewLease('r1', claim('B', 2, T0 + 1500)))
      expect(LeaseLostError.is(taken)).toBe(true)
      expect(await b.tail('r1')).toBe(1)
      // A take-over without appending (renewLease) on a run with no log lists no run.
      await leasesOf(b).renewLease('fresh', claim('B', 1, T0))
      expect(await leasesOf(a).readLease('fresh')).toMatchObject({ owner: 'B', epoch: 1 })
      expect(await a.listRuns()).toEqual(['r1'])
      await a.append('fresh', makeEnvelopes('fresh', 1, 1), {
        expectedSeq: 0,
        lease: claim('B', 1, T0 + 10),
      })
      expect(await b.tail('fresh')).toBe(1)
    })

    it('releases only for the holder; a released lease is free at once, epoch kept', async () => {
      const { a, b } = await open()
      await a.append('r1', makeEnvelopes('r1', 1, 1), {
        expectedSeq: 0,
        lease: claim('A', 3, T0, 60_000),
      })
      await leasesOf(b).releaseLease('r1', 'A', 2)
      await leasesOf(b).releaseLease('r1', 'B', 3)
      expect(await leasesOf(a).readLease('r1')).toMatchObject({ owner: 'A', epoch: 3 })
      expect((await leasesOf(a).readLease('r1'))?.expiresAt).toBe(T0 + 60_000)
      await leasesOf(a).releaseLease('r1', 'A', 3)
      expect(await leasesOf(b).readLease('r1')).toEqual({
        runId: 'r1',
        owner: 'A',
        epoch: 3,
        expiresAt: 0,
      })
      // Free at once, but only for a greater epoch.
      const same = await rejection(
        b.append('r1', makeEnvelopes('r1', 2, 1), { expectedSeq: 1, lease: claim('B', 3, T0) }),
      )
      expect(LeaseLostError.is(same)).toBe(true)
      await b.append('r1', makeEnvelopes('r1', 2, 1), {
        expectedSeq: 1,
        lease: claim('B', 4, T0 + 1),
      })
      expect(await leasesOf(a).readLease('r1')).toMatchObject({ owner: 'B', epoch: 4 })
      // An append carrying `expiresAt <= now` commits and releases in one write.
      await b.append('r1', makeEnvelopes('r1', 3, 1), {
        expectedSeq: 2,
        lease: { owner: 'B', epoch: 4, expiresAt: T0 + 2, now: T0 + 2 },
      })
      await a.append('r1', makeEnvelopes('r1', 4, 1), {
        expectedSeq: 3,
        lease: claim('A', 5, T0 + 2),
      })
      expect(await b.tail('r1')).toBe(4)
    })

    it('claims due runs whose lease is free or expired, never one run for two claimers', async () => {
      const { a, b } = await open()
      const runs = Array.from({ length: 40 }, (_, i) => `due-${i}`)
      for (const [i, runId] of runs.entries()) {
        await a.append(runId, makeEnvelopes(runId, 1, 1), {
          expectedSeq: 0,
          meta: meta(T0 + i),
          // Every fourth run is held by a live owner; the others were released.
          lease: i % 4 === 0 ? claim('L', 1, T0, 1_000_000) : claim('L', 1, T0, 0),
        })
      }
      await a.append('later', makeEnvelopes('later', 1, 1), {
        expectedSeq: 0,
        meta: meta(T0 + 1_000_000),
      })
      await a.append('none', makeEnvelopes('none', 1, 1), { expectedSeq: 0, meta: meta(null) })
      const now = T0 + 100
      // Both claim at once, in small pages, until nothing is left.
      const claimed: Record<string, string[]> = { A: [], B: [] }
      const drain = async (owner: 'A' | 'B', store: EventStore) => {
        for (;;) {
          const page = await leasesOf(store).claimDue(owner, now, now + 5000, 3)
          if (page.length === 0) return
          for (const due of page) {
            expect(due.epoch).toBe(2)
            expect(due.nextDeadlineAt).toBeLessThanOrEqual(now)
            claimed[owner].push(due.runId)
          }
        }
      }
      await Promise.all([drain('A', a), drain('B', b)])
      const all = [...claimed.A, ...claimed.B]
      expect(new Set(all).size).toBe(all.length)
      expect(all.sort()).toEqual(runs.filter((_, i) => i % 4 !== 0).sort())
      for (const runId of claimed.B) {
        expect(await leasesOf(a).readLease(runId)).toEqual({
          runId,
          owner: 'B',
          epoch: 2,
          expiresAt: now + 5000,
        })
      }
      // Claimed leases are live now: nobody claims them again until they expire.
      expect(await leasesOf(a).claimDue('C', now + 4999, now + 9999, 100)).toEqual([])
      const again = await leasesOf(b).claimDue('C', now + 5000, now + 9999, 100)
      expect(again.length).toBe(30)
      // The holder's append with its claimed epoch is accepted.
      const mine = claimed.A[0]
      await a.append(mine, makeEnvelopes(mine, 2, 1), {
        expectedSeq: 1,
        lease: claim('C', 3, now + 5001),
      })
    })

    it('claims only the definition versions asked for; markDue brings a deadline forward', async () => {
      const { a, b } = await open()
      const onVersion = (definitionVersion: string, at: number | null): RunMeta => ({
        ...meta(at),
        definitionVersion,
      })
      await a.append('v1-due', makeEnvelopes('v1-due', 1, 1), {
        expectedSeq: 0,
        meta: onVersion('1', T0),
      })
      await a.append('v2-due', makeEnvelopes('v2-due', 1, 1), {
        expectedSeq: 0,
        meta: onVersion('2', T0),
      })
      await a.append('v1-parked', makeEnvelopes('v1-parked', 1, 1), {
        expectedSeq: 0,
        meta: onVersion('1', null),
      })
      const v2 = [{ kind: 'workflow', definitionName: 'demo', definitionVersion: '2' }]
      const other = [{ kind: 'workflow', definitionName: 'other', definitionVersion: '1' }]
      expect(await leasesOf(a).claimDue('A', T0 + 1, T0 + 1000, 10, other)).toEqual([])
      const mine = await leasesOf(a).claimDue('A', T0 + 1, T0 + 1000, 10, v2)
      expect(mine.map((d) => d.runId)).toEqual(['v2-due'])
      // A host with no versions to offer claims nothing; without a filter, everything due.
      expect(await leasesOf(b).claimDue('B', T0 + 1, T0 + 1000, 10, [])).toEqual([])
      // A parked run marked due (input recorded by a host that cannot execute it) is claimed
      // by a host of its version once `at` has come; a later mark leaves the earlier deadline.
      await leasesOf(b).markDue('v1-parked', T0 + 50)
      await leasesOf(b).markDue('v1-parked', T0 + 80)
      await leasesOf(b).markDue('no-such-run', T0)
      const v1 = [{ kind: 'workflow', definitionName: 'demo', definitionVersion: '1' }]
      const early = await leasesOf(b).claimDue('B', T0 + 49, T0 + 1000, 10, v1)
      expect(early.map((d) => d.runId)).toEqual(['v1-due'])
      const marked = await leasesOf(b).claimDue('B', T0 + 50, T0 + 1000, 10, v1)
      expect(marked).toEqual([{ runId: 'v1-parked', epoch: 1, nextDeadlineAt: T0 + 50 }])
    })
  })
}
