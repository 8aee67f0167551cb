import { claimEpochFor, claimGranted, decideClaim, type HeldClaim } from '../../core/claim-rule.js'
import type { Claim, ClaimStore } from '../../core/ports.js'

const toClaim = (name: string, held: HeldClaim): Claim => ({ name, ...held })

/**
 * Named claims of one process (the memory store): the claim rule applied to a map. `holds`
 * tells the feed whether a checkpoint's writer still holds its projector's claim.
 */
export function memoryClaims(): {
  claims: ClaimStore
  holds: (name: string, owner: string, epoch: number) => boolean
} {
  const claims = new Map<string, HeldClaim>()
  const holds = (name: string, owner: string, epoch: number) => {
    const stored = claims.get(name)
    return stored?.owner === owner && stored.epoch === epoch && stored.expiresAt > 0
  }
  const store: ClaimStore = {
    shared: false,
    async claim(name, owner, now, expiresAt) {
      const stored = claims.get(name) ?? null
      const epoch = claimEpochFor(stored, owner)
      if (!claimGranted(decideClaim(stored, { owner, epoch, now }))) return null
      const held = { owner, epoch, expiresAt }
      claims.set(name, held)
      return toClaim(name, held)
    },
    async release(name, owner, epoch) {
      const stored = claims.get(name)
      if (stored && stored.owner === owner && stored.epoch === epoch) stored.expiresAt = 0
    },
    async read(name) {
      const stored = claims.get(name)
      return stored ? toClaim(name, stored) : null
    },
    async list(prefix) {
      const out: Claim[] = []
      for (const [name, held] of claims) if (name.startsWith(prefix)) out.push(toClaim(name, held))
      return out.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
    },
  }
  return { claims: store, holds }
}
