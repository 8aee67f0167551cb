/**
 * A claim as a store keeps it: who holds it, its fencing token (`epoch`, bumped by each
 * take-over) and when it lapses (engine clock ms; 0 once its holder let it go). A run's lease
 * (`Lease`) and a named claim (`Claim`) are both kept this way.
 */
export interface HeldClaim {
  owner: string
  epoch: number
  expiresAt: number
}

/** What a writer asks of a stored claim: to hold it as `owner` at `epoch`, at its clock's `now`. */
export interface ClaimAttempt {
  owner: string
  epoch: number
  now: number
}

/**
 * How the store answers a claim:
 * - `renewal`: the stored claim is `owner`'s at that `epoch` (live, lapsed or let go): granted;
 * - `takeover`: the stored claim is free (never taken, let go, or expired at or before `now`)
 *   and the claim's epoch is greater than the stored one: granted;
 * - `held`: another owner (or another epoch of the same owner) holds it live: refused;
 * - `stale`: it is free, but the claim's epoch is not past the stored one (a writer whose
 *   claim was taken over since, or a take-over that did not bump the epoch): refused.
 */
export type ClaimDecision = 'renewal' | 'takeover' | 'held' | 'stale'

/**
 * The one rule of every claim in a store: a run's lease carried by an append or a renewal
 * (`LeaseClaim`, ports.ts) and a named claim (`ClaimStore`, ports.ts). The memory store calls
 * it; the SQLite and Postgres stores restate it in their SQL (a statement cannot call it) and
 * name this function beside each restatement. `describeLeaseStore` and `describeClaimStore`
 * (`skein/testing/vitest`) hold every store to one table of cases of this rule.
 *
 * A stored claim of `null` was never taken (epoch 0).
 */
export function decideClaim(stored: HeldClaim | null, claim: ClaimAttempt): ClaimDecision {
  if (stored !== null && stored.owner === claim.owner && stored.epoch === claim.epoch) {
    return 'renewal'
  }
  if (stored !== null && !claimFree(stored, claim.now)) return 'held'
  return claim.epoch > (stored?.epoch ?? 0) ? 'takeover' : 'stale'
}

/** Whether the rule grants the claim (a renewal or a take-over). */
export const claimGranted = (decision: ClaimDecision): boolean =>
  decision === 'renewal' || decision === 'takeover'

/**
 * Whether anyone may take the stored claim at `now`: never taken, let go (expiresAt 0) or
 * expired at or before `now`. What "claim due runs" and a take-over ask of a stored claim.
 */
export const claimFree = (stored: HeldClaim | null, now: number): boolean =>
  stored === null || stored.expiresAt <= now

/**
 * The epoch the named-claim port (`ClaimStore.claim`) asks for on `owner`'s behalf: the stored
 * one while `owner` holds it and has not let it go (a renewal), otherwise the next one (a
 * take-over). With `decideClaim` that grants the claim exactly when `owner` holds it or it is
 * free, and never answers `stale`.
 */
export function claimEpochFor(stored: HeldClaim | null, owner: string): number {
  if (stored === null) return 1
  return stored.owner === owner && stored.expiresAt > 0 ? stored.epoch : stored.epoch + 1
}
