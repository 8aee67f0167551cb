import { LeaseLostError } from '../../core/errors.js'
import type { Lease, LeaseClaim } from '../../core/ports.js'

/** A stored lease as a store keeps it (no run id), or null when the run was never leased. */
export interface StoredLease {
  owner: string
  epoch: number
  expiresAt: number
}

/**
 * The one rule every store applies to a `LeaseClaim` (ports.ts): a renewal by the holder of
 * the stored epoch, or a take-over of a free or expired lease with a greater epoch. Throws
 * LeaseLostError otherwise; the caller then writes nothing.
 */
export function checkClaim(runId: string, stored: StoredLease | null, claim: LeaseClaim): void {
  if (stored && stored.owner === claim.owner && stored.epoch === claim.epoch) return
  const storedEpoch = stored?.epoch ?? 0
  const free = !stored || stored.expiresAt <= claim.now
  if (free && claim.epoch > storedEpoch) return
  throw new LeaseLostError(
    free
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

export const toLease = (runId: string, stored: StoredLease): Lease => ({
  runId,
  owner: stored.owner,
  epoch: stored.epoch,
  expiresAt: stored.expiresAt,
})
