import { expect, it } from 'vitest'
import { claimFree, claimGranted } from '../core/claim-rule.js'
import { LeaseLostError } from '../core/errors.js'
import type { AppendOptions, EventStore, LeaseStore, RunMeta } from '../core/ports.js'
import { CLAIM_CASES, CLAIM_NOW, type ClaimCase } from './claim-cases.js'
import { makeEnvelopes } from './make-envelopes.js'

interface Pair {
  a: EventStore
  b: EventStore
}

const meta = (nextDeadlineAt: number | null): RunMeta => ({
  status: 'running',
  kind: 'workflow',
  definitionName: 'demo',
  definitionVersion: '1',
  createdAt: CLAIM_NOW,
  updatedAt: CLAIM_NOW,
  nextDeadlineAt,
})

const leasesOf = (store: EventStore): LeaseStore => {
  if (!store.leases) throw new Error('the store under test has no `leases`')
  return store.leases
}

/** Writes the case's stored lease through `a`: an append (one event) that takes it at time 0. */
async function storeLease(a: EventStore, runId: string, c: ClaimCase, deadline: number | null) {
  const lease = c.stored && { ...c.stored, now: 0 }
  await a.append(runId, makeEnvelopes(runId, 1, 1), {
    expectedSeq: 0,
    meta: meta(deadline),
    ...(lease ? { lease } : {}),
  })
}

/** The case's attempt as a claim until one minute after it. */
const claimOf = (c: ClaimCase) => ({ ...c.claim, expiresAt: CLAIM_NOW + 60_000 })

async function outcome(attempt: Promise<unknown>): Promise<'granted' | 'refused'> {
  try {
    await attempt
    return 'granted'
  } catch (error) {
    if (LeaseLostError.is(error)) return 'refused'
    throw error
  }
}

/** What the store holds after the attempt: the claim when granted, the stored lease otherwise. */
async function expectLeaseAfter(b: EventStore, runId: string, c: ClaimCase, granted: boolean) {
  const lease = await leasesOf(b).readLease(runId)
  const expected = granted ? claimOf(c) : c.stored
  expect(lease === null ? null : { ...lease, runId: undefined }).toEqual(
    expected && {
      runId: undefined,
      owner: expected.owner,
      epoch: expected.epoch,
      expiresAt: expected.expiresAt,
    },
  )
}

/**
 * The claim rule's table (CLAIM_CASES) through every way a store checks a run's lease: an
 * append's claim (plain, and keyed: two statements of the rule in Postgres), `renewLease`, and
 * "free" as `claimDue` reads it. Each case on a run of its own, written through one handle and
 * attempted through the other.
 */
export function leaseRuleCases(open: () => Promise<Pair>): void {
  const appendPaths: Array<[string, (c: ClaimCase) => Partial<AppendOptions>]> = [
    ['a plain append', () => ({})],
    ['a keyed append', (c) => ({ idempotencyKey: `key-${c.name}` })],
  ]
  for (const [path, extra] of appendPaths) {
    it(`decides every case of the claim rule alike: ${path}`, async () => {
      const { a, b } = await open()
      for (const [i, c] of CLAIM_CASES.entries()) {
        const runId = `case-${i}`
        await storeLease(a, runId, c, null)
        const granted = claimGranted(c.decision)
        const attempt = b.append(runId, makeEnvelopes(runId, 2, 1), {
          expectedSeq: 1,
          lease: claimOf(c),
          ...extra(c),
        })
        expect({ case: c.name, outcome: await outcome(attempt) }).toEqual({
          case: c.name,
          outcome: granted ? 'granted' : 'refused',
        })
        expect(await a.tail(runId)).toBe(granted ? 2 : 1)
        await expectLeaseAfter(a, runId, c, granted)
      }
    })
  }

  it('decides every case of the claim rule alike: renewLease', async () => {
    const { a, b } = await open()
    for (const [i, c] of CLAIM_CASES.entries()) {
      const runId = `case-${i}`
      if (c.stored) await leasesOf(a).renewLease(runId, { ...c.stored, now: 0 })
      const granted = claimGranted(c.decision)
      const attempt = leasesOf(b).renewLease(runId, claimOf(c))
      expect({ case: c.name, outcome: await outcome(attempt) }).toEqual({
        case: c.name,
        outcome: granted ? 'granted' : 'refused',
      })
      await expectLeaseAfter(a, runId, c, granted)
    }
  })

  it('claims a due run exactly when the rule calls its lease free', async () => {
    const { a, b } = await open()
    const expected: Array<{ runId: string; epoch: number }> = []
    for (const [i, c] of CLAIM_CASES.entries()) {
      const runId = `case-${i}`
      await storeLease(a, runId, c, CLAIM_NOW - 10)
      if (claimFree(c.stored, CLAIM_NOW))
        expected.push({ runId, epoch: (c.stored?.epoch ?? 0) + 1 })
    }
    const claimed = await leasesOf(b).claimDue('Z', CLAIM_NOW, CLAIM_NOW + 60_000, 1000)
    const byId = (x: { runId: string }, y: { runId: string }) => x.runId.localeCompare(y.runId)
    expect(claimed.map(({ runId, epoch }) => ({ runId, epoch })).sort(byId)).toEqual(
      expected.sort(byId),
    )
  })
}
