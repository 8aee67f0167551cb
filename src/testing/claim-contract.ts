import { describe, expect, it } from 'vitest'
import { claimEpochFor, claimGranted, decideClaim, type HeldClaim } from '../core/claim-rule.js'
import type { Claim, ClaimStore, EventStore } from '../core/ports.js'
import { CLAIM_CASES, CLAIM_NOW } from './claim-cases.js'
import type { StorePair } from './lease-contract.js'
import { openedPerTest } from './opened-per-test.js'

const claimsOf = (store: EventStore): ClaimStore => {
  if (!store.claims) throw new Error('the store under test has no `claims`')
  return store.claims
}

/** Makes the stored claim `held` under `name` through the port alone (claims and releases). */
async function storeClaim(claims: ClaimStore, name: string, held: HeldClaim): Promise<void> {
  for (let epoch = 1; epoch < held.epoch; epoch++) {
    await claims.claim(name, held.owner, 0, 1)
    await claims.release(name, held.owner, epoch)
  }
  const taken = await claims.claim(name, held.owner, 0, Math.max(1, held.expiresAt))
  expect(taken?.epoch).toBe(held.epoch)
  if (held.expiresAt === 0) await claims.release(name, held.owner, held.epoch)
}

/**
 * The claim contract: what `EventStore.claims` (a keyed lease over any name) promises, proven
 * with two store handles on one database, so a claim taken through one fences the other. Time
 * is data: every call carries its `now`, nothing sleeps. Every claim is held to the claim
 * rule's table of cases (`decideClaim`), with the epoch the port asks for (`claimEpochFor`).
 *
 * @example
 * describeClaimStore('sqlite', () => {
 *   const path = freshPath()
 *   const a = sqliteStore({ path })
 *   const b = sqliteStore({ path })
 *   return { a, b, close: async () => { await a.close(); await b.close() } }
 * })
 */
export function describeClaimStore(
  name: string,
  makePair: () => StorePair | Promise<StorePair>,
): void {
  describe(`ClaimStore contract: ${name}`, () => {
    const openPair = openedPerTest(makePair, (pair) => pair.close())
    const open = async () => {
      const pair = await openPair()
      return { a: claimsOf(pair.a), b: claimsOf(pair.b) }
    }

    it('decides every case of the claim rule alike', async () => {
      const { a, b } = await open()
      for (const [i, c] of CLAIM_CASES.entries()) {
        const name = `case:${i}`
        if (c.stored) await storeClaim(a, name, c.stored)
        const { owner } = c.claim
        const epoch = claimEpochFor(c.stored, owner)
        const granted = claimGranted(decideClaim(c.stored, { owner, epoch, now: CLAIM_NOW }))
        const expiresAt = CLAIM_NOW + 60_000
        const claimed = await b.claim(name, owner, CLAIM_NOW, expiresAt)
        const after: Claim | null = granted
          ? { name, owner, epoch, expiresAt }
          : c.stored && { name, ...c.stored }
        expect({ case: c.name, claimed }).toEqual({ case: c.name, claimed: granted ? after : null })
        expect({ case: c.name, stored: await a.read(name) }).toEqual({
          case: c.name,
          stored: after,
        })
      }
    })

    it('a take-over after expiry bumps the epoch; the old holder is fenced', async () => {
      const { a, b } = await open()
      expect(await b.read('sweep:retention')).toBeNull()
      const first = await a.claim('sweep:retention', 'A', 1000, 2000)
      expect(first).toEqual({ name: 'sweep:retention', owner: 'A', epoch: 1, expiresAt: 2000 })
      // Live: B is refused; A renews, keeping its epoch.
      expect(await b.claim('sweep:retention', 'B', 1999, 9000)).toBeNull()
      expect(await a.claim('sweep:retention', 'A', 1500, 3000)).toMatchObject({ epoch: 1 })
      // Expired: B takes it over with epoch + 1.
      const taken = await b.claim('sweep:retention', 'B', 3000, 9000)
      expect(taken).toEqual({ name: 'sweep:retention', owner: 'B', epoch: 2, expiresAt: 9000 })
      // A, back from a pause, cannot renew, and its release lets nothing go.
      expect(await a.claim('sweep:retention', 'A', 3001, 9500)).toBeNull()
      await a.release('sweep:retention', 'A', 1)
      expect(await b.read('sweep:retention')).toEqual(taken)
    })

    it('releases only for the holder at its epoch; a released claim is free at once', async () => {
      const { a, b } = await open()
      await a.claim('schedule:nightly', 'A', 1000, 60_000)
      await b.release('schedule:nightly', 'B', 1)
      await b.release('schedule:nightly', 'A', 2)
      expect(await b.read('schedule:nightly')).toMatchObject({ owner: 'A', expiresAt: 60_000 })
      await a.release('schedule:nightly', 'A', 1)
      expect(await b.read('schedule:nightly')).toEqual({
        name: 'schedule:nightly',
        owner: 'A',
        epoch: 1,
        expiresAt: 0,
      })
      // Free at once, for anyone (the former holder too), with the next epoch.
      expect(await b.claim('schedule:nightly', 'B', 1001, 5000)).toMatchObject({ epoch: 2 })
      await b.release('schedule:nightly', 'B', 2)
      expect(await a.claim('schedule:nightly', 'A', 1002, 5000)).toMatchObject({
        owner: 'A',
        epoch: 3,
      })
    })

    it('lists the claims under a prefix by name, live, lapsed or let go', async () => {
      const { a, b } = await open()
      await a.claim('slot:q1:k2', 'A', 1000, 5000)
      await a.claim('slot:q1:k1', 'A', 1000, 2000)
      await b.claim('slot:q2:k1', 'B', 1000, 5000)
      await b.claim('sweep:retention', 'B', 1000, 5000)
      await b.claim('slot:q1:k3', 'B', 1000, 5000)
      await b.release('slot:q1:k3', 'B', 1)
      expect((await b.list('slot:q1:')).map((c) => [c.name, c.owner, c.expiresAt])).toEqual([
        ['slot:q1:k1', 'A', 2000],
        ['slot:q1:k2', 'A', 5000],
        ['slot:q1:k3', 'B', 0],
      ])
      expect((await a.list('')).map((c) => c.name)).toEqual([
        'slot:q1:k1',
        'slot:q1:k2',
        'slot:q1:k3',
        'slot:q2:k1',
        'sweep:retention',
      ])
      expect(await a.list('slot:q3:')).toEqual([])
      // A prefix is text, not a pattern.
      expect(await a.list('slot:q_')).toEqual([])
      expect(await a.list('slot:%')).toEqual([])
    })

    it('a projector checkpoint moves only under its claim, held at the writer’s epoch', async () => {
      const pair = await openPair()
      const [fa, fb] = [pair.a.feed, pair.b.feed]
      if (!fa || !fb) return
      const a = claimsOf(pair.a)
      const b = claimsOf(pair.b)
      // Nobody holds it: no save.
      expect(await fa.saveCheckpoint('p', 'A', 1, 5, 1000)).toBe(false)
      expect(await fb.checkpoint('p')).toBeNull()
      await a.claim('projector:p', 'A', 1000, 2000)
      expect(await fa.saveCheckpoint('p', 'A', 1, 5, 1001)).toBe(true)
      expect(await fb.saveCheckpoint('p', 'B', 1, 9, 1001)).toBe(false)
      expect(await fb.checkpoint('p')).toEqual({ name: 'p', position: 5, updatedAt: 1001 })
      // Never backwards.
      expect(await fa.saveCheckpoint('p', 'A', 1, 3, 1002)).toBe(true)
      expect(await fb.checkpoint('p')).toEqual({ name: 'p', position: 5, updatedAt: 1001 })
      // B takes over after expiry: A, paused, is fenced by its old epoch.
      await b.claim('projector:p', 'B', 2000, 3000)
      expect(await fa.saveCheckpoint('p', 'A', 1, 8, 2001)).toBe(false)
      expect(await fb.saveCheckpoint('p', 'B', 2, 7, 2001)).toBe(true)
      expect(await fa.checkpoint('p')).toEqual({ name: 'p', position: 7, updatedAt: 2001 })
      // Let go: not even the former holder saves.
      await b.release('projector:p', 'B', 2)
      expect(await fb.saveCheckpoint('p', 'B', 2, 9, 2002)).toBe(false)
      expect((await fa.checkpoint('p'))?.position).toBe(7)
    })

    it('claimants racing through both handles: exactly one is granted each round', async () => {
      const { a, b } = await open()
      for (let round = 0; round < 5; round++) {
        const now = 10_000 * (round + 1)
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            (i % 2 === 0 ? a : b).claim('projector:race', `owner-${round}-${i}`, now, now + 5000),
          ),
        )
        const granted = results.filter((r) => r !== null)
        expect(granted).toHaveLength(1)
        expect(granted[0]?.epoch).toBe(round + 1)
        expect(await a.read('projector:race')).toEqual(granted[0])
      }
    })
  })
}
