import { LeaseLostError } from '../core/errors.js'
import type { Clock, Lease, LeaseClaim, LeaseStore } from '../core/ports.js'
import { backoffAfter } from '../core/retry.js'
import type { Observation, OwnershipOptions } from './options.js'

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

/** What the writer holds: `stored` once an append or claim wrote it, `released` once let go. */
interface Held {
  epoch: number
  expiresAt: number
  stored: boolean
  released: boolean
}

/**
 * One run's lease as its writer in this process sees it (docs/engine.md, "Several processes on one store"). `acquire` before an
 * operation: keeps a lease held, takes a free one (stored epoch + 1, written by the first
 * commit, so taking costs no write of its own), or waits for another owner to let go. Every
 * commit carries `claim()`; the last commit before the run parks releases it (`release`), so one
 * process pays no write for ownership. While attempts are in flight a timer renews it.
 */
export class RunLease {
  private held: Held | null = null
  private renewTimer: unknown
  /** Called when a renewal finds the lease taken: the writer stops its attempts. */
  onLost: () => void = () => {}
  /**
   * Whether the writer has work here that needs the lease (attempts in flight or settled and
   * not yet recorded). A held lease with none is not renewed: it lapses, and the run (due at
   * once while an attempt is recorded as started) is claimed again and recovered from the log.
   * That is what heals a commit that took effect but reported an error.
   */
  busy: () => boolean = () => true

  constructor(
    private readonly ctx: LeaseHost,
    private readonly own: Ownership,
    private readonly runId: string,
  ) {}

  /** The lease is held by this writer (written, not released). */
  get holding(): boolean {
    return this.held?.stored === true && !this.held.released
  }

  /** A run whose id this engine just generated: nobody can hold it. */
  takeNew(): void {
    this.held = { epoch: 1, expiresAt: 0, stored: false, released: false }
  }

  /**
   * claimDue gave this process the run at `epoch`. Ignored when this writer is already there:
   * it took the run back at that epoch itself and committed it (perhaps released since: a store
   * whose claim resolves late, as over a network), or went past it.
   */
  adopt(epoch: number, expiresAt: number): void {
    const held = this.held
    if (held && (held.epoch > epoch || (held.epoch === epoch && held.stored))) return
    this.held = { epoch, expiresAt, stored: true, released: false }
    this.armRenewal()
  }

  /**
   * Makes this writer the run's owner before an operation. `wait`: while another process holds
   * the lease, poll until it is let go or expires (failing with LEASE_LOST after `waitMs`);
   * otherwise return false at once (a deadline wake: the owner serves it).
   */
  async acquire(wait: boolean): Promise<boolean> {
    const held = this.held
    if (held && !held.released) return true
    if (held?.released) {
      // Let go by this writer: take it back without reading (a conflict is a LeaseLostError).
      this.held = { epoch: held.epoch + 1, expiresAt: 0, stored: false, released: false }
      return true
    }
    const { clock } = this.ctx
    const started = clock.now()
    for (let polls = 1; ; polls++) {
      const lease = await this.own.leases.readLease(this.runId)
      const now = clock.now()
      if (!lease || this.expired(lease, now)) {
        this.goneUntil = lease && lease.expiresAt > now ? lease.expiresAt : 0
        this.held = { epoch: (lease?.epoch ?? 0) + 1, expiresAt: 0, stored: false, released: false }
        return true
      }
      if (lease.owner === this.own.owner) {
        // Claimed for this process (claimDue) or left by an earlier writer of it: the same owner.
        this.held = {
          epoch: lease.epoch,
          expiresAt: lease.expiresAt,
          stored: true,
          released: false,
        }
        return true
      }
      if (!wait) return false
      if (now - started >= this.own.waitMs) {
        throw new LeaseLostError(
          `run ${this.runId} is owned by another process (${lease.owner}) that has not let it go within ${this.own.waitMs} ms; retry later`,
          { runId: this.runId, owner: lease.owner, retryAfterSeconds: 1 },
        )
      }
      const pause = backoffAfter(polls, { initialMs: 10, maxMs: 200 })
      const until = Math.min(pause, Math.max(1, lease.expiresAt - now + 1))
      await new Promise<void>((resolve) => clock.setTimeout(resolve, until))
    }
  }

  private expired(lease: Lease, now: number): boolean {
    return lease.expiresAt <= now || this.own.isGone(lease.owner)
  }

  /**
   * The claim a commit carries; `release` lets the run go with this commit (nothing in flight).
   * Throws LeaseLostError when a renewal already found the lease taken.
   *
   * A lease this writer let go (an earlier commit of the same pass released it, and something
   * fell due before the pass looked again) or let lapse is taken back with epoch + 1, as
   * `acquire` does: meanwhile this process's own `claimDue` may have claimed the run, free and
   * due, at that same epoch + 1, and the store accepts the same owner and epoch whichever write
   * lands first. Carrying the old epoch instead was refused once the claim landed, after the
   * operation had committed: the kill loop's LEASE_LOST (decisions.md, "Run ownership on by default").
   */
  claim(now: number, release: boolean): LeaseClaim {
    const held = this.held
    if (held?.stored && (held.released || held.expiresAt <= now)) {
      this.held = { epoch: held.epoch + 1, expiresAt: 0, stored: false, released: false }
      this.stopRenewal()
    }
    return this.claimOf(now, release)
  }

  private claimOf(now: number, release: boolean): LeaseClaim {
    const held = this.held
    if (!held) {
      throw new LeaseLostError(`run ${this.runId}: this process lost the lease`, {
        runId: this.runId,
      })
    }
    // A take-over of an owner known to be gone asserts its lease's end as "now".
    return {
      owner: this.own.owner,
      epoch: held.epoch,
      expiresAt: release ? now : now + this.own.leaseMs,
      now: held.stored ? now : Math.max(now, this.goneUntil),
    }
  }

  /** The expiry of a gone owner's lease this writer is taking over (0: none). */
  private goneUntil = 0

  /** The commit carrying `claim` is durable. */
  committed(claim: LeaseClaim): void {
    const released = claim.expiresAt <= claim.now
    this.held = { epoch: claim.epoch, expiresAt: claim.expiresAt, stored: true, released }
    this.goneUntil = 0
    if (released) this.stopRenewal()
    // A timer already armed stays: the commit extended the lease, and the renewal it makes
    // later extends it from then (no timer churn on every commit of a busy run).
    else if (this.renewTimer === undefined) this.armRenewal()
  }

  /** An append or renewal was refused: someone else owns the run now. */
  lost(): void {
    this.held = null
    this.goneUntil = 0
    this.stopRenewal()
  }

  /** The run parked without a commit that released it: let it go now. */
  async releaseIfHeld(): Promise<void> {
    const held = this.held
    if (!held?.stored || held.released) return
    held.released = true
    this.stopRenewal()
    try {
      await this.own.leases.releaseLease(this.runId, this.own.owner, held.epoch)
    } catch {
      // Not let go: it expires by itself.
    }
  }

  stopRenewal(): void {
    if (this.renewTimer !== undefined) this.ctx.clock.clearTimeout(this.renewTimer)
    this.renewTimer = undefined
  }

  private armRenewal(): void {
    this.stopRenewal()
    this.renewTimer = this.ctx.clock.setTimeout(() => this.renew(), this.own.renewMs)
  }

  private async renew(): Promise<void> {
    this.renewTimer = undefined
    const held = this.held
    if (!held?.stored || held.released || !this.busy()) return
    const now = this.ctx.clock.now()
    const claim = this.claimOf(now, false)
    try {
      await this.own.leases.renewLease(this.runId, claim)
      if (this.held === held) {
        held.expiresAt = claim.expiresAt
        this.armRenewal()
      }
    } catch (error) {
      if (LeaseLostError.is(error)) {
        if (this.held === held) {
          this.lost()
          this.onLost()
          this.ctx.observe({ type: 'lease.lost', runId: this.runId, epoch: held.epoch })
        }
        return
      }
      // A store hiccup: try again soon; the lease is still ours until it expires.
      if (this.held === held) this.armRenewal()
    }
  }
}
