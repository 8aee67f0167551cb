import { claimGranted, decideClaim, type HeldClaim } from '../../core/claim-rule.js'
import { LeaseLostError } from '../../core/errors.js'
import type { Lease, LeaseClaim } from '../../core/ports.js'

/**
 * `decideClaim` (core/claim-rule.ts) applied to a `LeaseClaim` (ports.ts): returns on a renewal
 * or a take-over, throws LeaseLostError (saying why) otherwise; the caller then writes nothing.
 */
export function checkClaim(runId: string, stored: HeldClaim | null, claim: LeaseClaim): void {
  const decision = decideClaim(stored, claim)
  if (claimGranted(decision)) return
  const storedEpoch = stored?.epoch ?? 0
  throw new LeaseLostError(
    decision === 'stale'
      ? `run ${runId}: lease epoch ${claim.epoch} is stale (the store is at epoch ${storedEpoch}); another process took the run over`
      : `run ${runId}: the lease is held by ${stored?.owner} (epoch ${storedEpoch}) until ${stored?.expiresAt}; nothing was written`,
    {
      runId,
      owner: claim.owner,
      epoch: claim.epoch,
      storedOwner: stored?.owner ?? null,
      storedEpoch,
      storedExpiresAt: stored?.expiresAt ?? null,
    },
  )
}

export const toLease = (runId: string, stored: HeldClaim): Lease => ({
  runId,
  owner: stored.owner,
  epoch: stored.epoch,
  expiresAt: stored.expiresAt,
})
