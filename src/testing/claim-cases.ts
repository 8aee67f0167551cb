import type { ClaimAttempt, ClaimDecision, HeldClaim } from '../core/claim-rule.js'

export interface ClaimCase {
  name: string
  /** The stored claim before the attempt (null: never taken). */
  stored: HeldClaim | null
  claim: ClaimAttempt
  decision: ClaimDecision
}

/** The time of every case's attempt. */
export const CLAIM_NOW = 1_000_000

const held = (owner: string, epoch: number, expiresAt: number): HeldClaim => ({
  owner,
  epoch,
  expiresAt,
})
const by = (owner: string, epoch: number): ClaimAttempt => ({ owner, epoch, now: CLAIM_NOW })
const LIVE = CLAIM_NOW + 1
const EXPIRED = CLAIM_NOW - 1
const RELEASED = 0

/**
 * The claim rule's cases (`decideClaim`, core/claim-rule.ts): one table that the rule's unit
 * test runs, and that `describeLeaseStore` and `describeClaimStore` run against every store,
 * so each store's own statement of the rule (SQL cannot call the function) answers alike.
 */
export const CLAIM_CASES: readonly ClaimCase[] = [
  { name: 'never taken, epoch 1', stored: null, claim: by('B', 1), decision: 'takeover' },
  { name: 'never taken, epoch 0', stored: null, claim: by('B', 0), decision: 'stale' },
  { name: 'holder, live', stored: held('A', 2, LIVE), claim: by('A', 2), decision: 'renewal' },
  {
    name: 'holder, lapsed, nobody took it',
    stored: held('A', 2, EXPIRED),
    claim: by('A', 2),
    decision: 'renewal',
  },
  {
    name: 'holder, let go, same epoch',
    stored: held('A', 2, RELEASED),
    claim: by('A', 2),
    decision: 'renewal',
  },
  {
    name: 'holder, let go, next epoch',
    stored: held('A', 2, RELEASED),
    claim: by('A', 3),
    decision: 'takeover',
  },
  {
    name: 'holder, lapsed, next epoch',
    stored: held('A', 2, EXPIRED),
    claim: by('A', 3),
    decision: 'takeover',
  },
  {
    name: 'holder, live, next epoch',
    stored: held('A', 2, LIVE),
    claim: by('A', 3),
    decision: 'held',
  },
  {
    name: 'holder, live, older epoch',
    stored: held('A', 2, LIVE),
    claim: by('A', 1),
    decision: 'held',
  },
  {
    name: 'other, live, next epoch',
    stored: held('A', 2, LIVE),
    claim: by('B', 3),
    decision: 'held',
  },
  {
    name: 'other, live, same epoch',
    stored: held('A', 2, LIVE),
    claim: by('B', 2),
    decision: 'held',
  },
  {
    name: 'other, expiring exactly now, next epoch',
    stored: held('A', 2, CLAIM_NOW),
    claim: by('B', 3),
    decision: 'takeover',
  },
  {
    name: 'other, lapsed, next epoch',
    stored: held('A', 2, EXPIRED),
    claim: by('B', 3),
    decision: 'takeover',
  },
  {
    name: 'other, let go, next epoch',
    stored: held('A', 2, RELEASED),
    claim: by('B', 3),
    decision: 'takeover',
  },
  {
    name: 'other, lapsed, same epoch',
    stored: held('A', 2, EXPIRED),
    claim: by('B', 2),
    decision: 'stale',
  },
  {
    name: 'other, let go, older epoch',
    stored: held('A', 2, RELEASED),
    claim: by('B', 1),
    decision: 'stale',
  },
  {
    name: 'holder, lapsed, older epoch',
    stored: held('A', 2, EXPIRED),
    claim: by('A', 1),
    decision: 'stale',
  },
]
