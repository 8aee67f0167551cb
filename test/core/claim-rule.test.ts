import { describe, expect, it } from 'vitest'
import { claimEpochFor, claimFree, claimGranted, decideClaim } from '../../src/core/claim-rule.js'
import { CLAIM_CASES, CLAIM_NOW } from '../../src/testing/claim-cases.js'

describe('the claim rule (decideClaim)', () => {
  it.each(CLAIM_CASES.map((c) => [c.name, c] as const))('%s', (_, c) => {
    expect(decideClaim(c.stored, c.claim)).toBe(c.decision)
  })

  it('covers every decision, and grants exactly renewals and take-overs', () => {
    expect(new Set(CLAIM_CASES.map((c) => c.decision))).toEqual(
      new Set(['renewal', 'takeover', 'held', 'stale']),
    )
    expect(['renewal', 'takeover', 'held', 'stale'].map((d) => claimGranted(d as never))).toEqual([
      true,
      true,
      false,
      false,
    ])
  })

  it('the named-claim port asks for an epoch the rule never calls stale', () => {
    for (const c of CLAIM_CASES) {
      const epoch = claimEpochFor(c.stored, c.claim.owner)
      const decision = decideClaim(c.stored, { ...c.claim, epoch })
      expect(decision).not.toBe('stale')
      // Granted exactly when the owner holds it (not let go) or it is free.
      const holds = c.stored?.owner === c.claim.owner && c.stored.expiresAt > 0
      expect(claimGranted(decision)).toBe(holds || claimFree(c.stored, CLAIM_NOW))
    }
  })
})
