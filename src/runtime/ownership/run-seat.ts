import { LeaseLostError } from '../../core/errors.js'
import type { Lease, LeaseClaim } from '../../core/ports.js'
import { backoffAfter } from '../../core/retry.js'
import type { LeaseHost, Ownership } from './ownership.js'

/**
 * Where this writer stands on its run's lease:
 * - `none`: nothing known (read the store before writing);
 * - `taking`: free, taken at `epoch` (stored epoch + 1); the next commit writes it;
 * - `held`: written by a commit or a claim, live until `expiresAt`, renewed while work is in
 *   flight;
 * - `released`: let go by this writer at `epoch` (taken back at epoch + 1 without reading);
 * - `lost`: another process took it (an append or a renewal was refused).
 */
export type SeatState =
  | { readonly state: 'none' }
  | { readonly state: 'taking'; readonly epoch: number; readonly goneUntil: number }
  | { readonly state: 'held'; readonly epoch: number; readonly expiresAt: number }
  | { readonly state: 'released'; readonly epoch: number; readonly expiresAt: number }
  | { readonly state: 'lost' }

const NONE: SeatState = { state: 'none' }
const LOST: SeatState = { state: 'lost' }
const taking = (epoch: number, goneUntil = 0): SeatState => ({ state: 'taking', epoch, goneUntil })

/**
 * One run's seat: its lease as its writer in this process sees it (docs/engine.md, "Several
 * processes on one store"). `acquire` before an operation keeps a lease held, takes a free one
 * (stored epoch + 1, written by the first commit, so taking costs no write of its own), or
 * waits for another owner to let go. Every commit goes through `commit`: the append carries the
 * claim, and the result settles the seat (committed: held, or released when the run parks;
 * refused: lost). While attempts are in flight a timer renews it.
 */
export class RunSeat {
  private seat: SeatState = NONE
  private renewTimer: unknown
  /** Called when the seat is lost (a refused commit or renewal): the writer stops its work. */
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

  get state(): SeatState {
    return this.seat
  }

  /** The lease is held by this writer (written, not released). */
  get holding(): boolean {
    return this.seat.state === 'held'
  }

  /** A run whose id this engine just generated: nobody can hold it. */
  takeNew(): void {
    this.seat = taking(1)
  }

  /**
   * A seat this process let go in an earlier writer of the run (the writer was dropped once
   * the run parked): taken back at `epoch` + 1 without reading the lease, as a seat released
   * in this writer is. Stale (another process took the run since): the commit is refused, the
   * seat is lost and the next attempt reads the lease (decisions.md, "A due wake reads what it
   * folds, once").
   */
  resumeReleased(epoch: number): void {
    if (this.seat.state === 'none') this.seat = { state: 'released', epoch, expiresAt: 0 }
  }

  /**
   * claimDue gave this process the run at `epoch`. Ignored when this writer is already there:
   * it took the run back at that epoch itself and committed it (perhaps released since: a store
   * whose claim resolves late, as over a network), or went past it.
   */
  adopt(epoch: number, expiresAt: number): void {
    const seat = this.seat
    if (seat.state === 'taking' && seat.epoch > epoch) return
    if ((seat.state === 'held' || seat.state === 'released') && seat.epoch >= epoch) return
    this.seat = { state: 'held', epoch, expiresAt }
    this.armRenewal()
  }

  /**
   * Makes this writer the run's owner before an operation. `wait`: while another process holds
   * the lease, poll until it is let go or expires (failing with LEASE_LOST after `waitMs`);
   * otherwise return false at once (a deadline wake: the owner serves it).
   */
  async acquire(wait: boolean): Promise<boolean> {
    const seat = this.seat
    if (seat.state === 'taking' || seat.state === 'held') return true
    if (seat.state === 'released') {
      // Let go by this writer: take it back without reading (a conflict is a LeaseLostError).
      this.seat = taking(seat.epoch + 1)
      return true
    }
    const { clock } = this.ctx
    const started = clock.now()
    for (let polls = 1; ; polls++) {
      const lease = await this.own.leases.readLease(this.runId)
      const now = clock.now()
      if (!lease || this.expired(lease, now)) {
        const goneUntil = lease && lease.expiresAt > now ? lease.expiresAt : 0
        this.seat = taking((lease?.epoch ?? 0) + 1, goneUntil)
        return true
      }
      if (lease.owner === this.own.owner) {
        // Claimed for this process (claimDue) or left by an earlier writer of it: the same owner.
        this.seat = { state: 'held', epoch: lease.epoch, expiresAt: lease.expiresAt }
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
   * One commit under the run's claim: `append` writes the batch carrying the claim, and its
   * result settles the seat. Committed: the lease is held until the claim's expiry (renewed
   * while work is in flight), or let go with the commit when the run is `parking` and its next
   * deadline (`deadlineAt`) is not due yet: one process pays no write for ownership. Wrong
   * only if something falls due meanwhile; the next commit takes it back. Refused with LeaseLostError: the seat is lost and the writer's work
   * stopped (nothing of the commit was written, nothing it recorded may start here). Throws
   * LeaseLostError at once when a renewal already found the lease taken.
   */
  commit(
    now: number,
    parking: boolean,
    deadlineAt: number | null,
    append: (claim: LeaseClaim) => Promise<void>,
  ): Promise<void> {
    const claim = this.claim(now, parking && (deadlineAt === null || deadlineAt > now))
    return this.settle(claim, append(claim))
  }

  private async settle(claim: LeaseClaim, appending: Promise<void>): Promise<void> {
    try {
      await appending
    } catch (error) {
      if (LeaseLostError.is(error)) this.lose()
      throw error
    }
    const released = claim.expiresAt <= claim.now
    this.seat = {
      state: released ? 'released' : 'held',
      epoch: claim.epoch,
      expiresAt: claim.expiresAt,
    }
    if (released) this.stopRenewal()
    // A timer already armed stays: the commit extended the lease, and the renewal it makes
    // later extends it from then (no timer churn on every commit of a busy run).
    else if (this.renewTimer === undefined) this.armRenewal()
  }

  /**
   * The claim a commit carries; `release` lets the run go with this commit (nothing in flight).
   *
   * A lease this writer let go (an earlier commit of the same pass released it, and something
   * fell due before the pass looked again) or let lapse is taken back with epoch + 1, as
   * `acquire` does: meanwhile this process's own `claimDue` may have claimed the run, free and
   * due, at that same epoch + 1, and the store accepts the same owner and epoch whichever write
   * lands first. Carrying the old epoch instead was refused once the claim landed, after the
   * operation had committed: the kill loop's LEASE_LOST (decisions.md, "Run ownership on by default").
   */
  private claim(now: number, release: boolean): LeaseClaim {
    const seat = this.seat
    if (seat.state === 'released' || (seat.state === 'held' && seat.expiresAt <= now)) {
      this.seat = taking(seat.epoch + 1)
      this.stopRenewal()
    }
    return this.claimOf(now, release)
  }

  private claimOf(now: number, release: boolean): LeaseClaim {
    const seat = this.seat
    if (seat.state === 'none' || seat.state === 'lost') {
      throw new LeaseLostError(`run ${this.runId}: this process lost the lease`, {
        runId: this.runId,
      })
    }
    // A take-over of an owner known to be gone asserts its lease's end as "now".
    return {
      owner: this.own.owner,
      epoch: seat.epoch,
      expiresAt: release ? now : now + this.own.leaseMs,
      now: seat.state === 'taking' ? Math.max(now, seat.goneUntil) : now,
    }
  }

  /** Someone else owns the run now: the writer's work stops. */
  private lose(): void {
    this.seat = LOST
    this.stopRenewal()
    this.onLost()
  }

  /**
   * Holds the lease before work that appends nothing (a restore of worker tasks, docs/workers.md
   * "Durable tasks"): a seat only being taken writes its claim now (`renewLease`), so no other
   * process appends to the run until this writer lets it go. Refused with LeaseLostError (the
   * seat is lost) when another process took the run meanwhile.
   */
  async hold(): Promise<void> {
    const seat = this.seat
    if (seat.state === 'held' && seat.expiresAt > this.ctx.clock.now()) return
    const claim = this.claim(this.ctx.clock.now(), false)
    try {
      await this.own.leases.renewLease(this.runId, claim)
    } catch (error) {
      if (LeaseLostError.is(error)) this.lose()
      throw error
    }
    this.seat = { state: 'held', epoch: claim.epoch, expiresAt: claim.expiresAt }
  }

  /** The run parked without a commit that released it: let it go now. */
  async releaseIfHeld(): Promise<void> {
    const seat = this.seat
    if (seat.state !== 'held') return
    this.seat = { state: 'released', epoch: seat.epoch, expiresAt: seat.expiresAt }
    this.stopRenewal()
    try {
      await this.own.leases.releaseLease(this.runId, this.own.owner, seat.epoch)
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

  /** A renewal's result counts only while the seat is the one it renewed. */
  private async renew(): Promise<void> {
    this.renewTimer = undefined
    const seat = this.seat
    if (seat.state !== 'held' || !this.busy()) return
    const claim = this.claimOf(this.ctx.clock.now(), false)
    try {
      await this.own.leases.renewLease(this.runId, claim)
      if (this.seat === seat) {
        this.seat = { state: 'held', epoch: seat.epoch, expiresAt: claim.expiresAt }
        this.armRenewal()
      }
    } catch (error) {
      if (LeaseLostError.is(error)) {
        if (this.seat === seat) {
          this.lose()
          this.ctx.observe({ type: 'lease.lost', runId: this.runId, epoch: seat.epoch })
        }
        return
      }
      // A store hiccup: try again soon; the lease is still ours until it expires.
      if (this.seat === seat) this.armRenewal()
    }
  }
}
