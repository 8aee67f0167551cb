import type { Clock, LeaseStore } from '../../core/ports.js'
import type { Observation, OwnershipOptions } from '../options.js'

/** What a lease needs of the engine (not the whole context: no import loop). */
export interface LeaseHost {
  clock: Clock
  observe(observation: Omit<Observation, 'at'>): void
}

export interface Ownership {
  leases: LeaseStore
  owner: string
  leaseMs: number
  renewMs: number
  pollMs: number
  /** This engine claims due runs (`OwnershipOptions.claimDue`). */
  claimDue: boolean
  waitMs: number
  isGone: (owner: string) => boolean
}

export function resolveOwnership(
  option: OwnershipOptions | false | undefined,
  leases: LeaseStore | undefined,
  defaults: { owner: () => string; isGone: (owner: string) => boolean },
): Ownership | undefined {
  // On by default wherever other processes can reach the store's leases (`shared`: a SQLite
  // file, Postgres). The memory store's leases are one process's own: nothing to enforce, so
  // nothing is paid unless `ownership` is passed. `ownership: false` turns it off.
  if (option === false || !leases) return undefined
  if (option === undefined && !leases.shared) return undefined
  const o = option ?? {}
  if (o.claimDue !== undefined && typeof o.claimDue !== 'boolean') {
    throw new TypeError(`createEngine: ownership.claimDue must be a boolean, got ${o.claimDue}`)
  }
  const positive = (name: string, value: number | undefined, fallback: number) => {
    const v = value ?? fallback
    if (!Number.isFinite(v) || v <= 0) {
      throw new TypeError(`createEngine: ownership.${name} must be a positive number, got ${value}`)
    }
    return v
  }
  const leaseMs = positive('leaseMs', o.leaseMs, 10_000)
  const renewMs = positive('renewMs', o.renewMs, Math.max(1, Math.floor(leaseMs / 3)))
  if (renewMs >= leaseMs) {
    throw new TypeError('createEngine: ownership.renewMs must be less than ownership.leaseMs')
  }
  return {
    leases,
    owner: o.owner ?? defaults.owner(),
    leaseMs,
    renewMs,
    pollMs: positive('pollMs', o.pollMs, 500),
    claimDue: o.claimDue ?? true,
    waitMs: positive('waitMs', o.waitMs, 30_000),
    isGone: o.isGone ?? defaults.isGone,
  }
}
