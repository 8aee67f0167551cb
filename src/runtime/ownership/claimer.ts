import type { Clock } from '../../core/ports.js'

/** One round of claiming due runs (`claimDue`). */
export interface ClaimRound<T> {
  /** Claims up to `limit` due runs nobody holds, for this process, as of `now`. */
  claim(now: number, limit: number): Promise<readonly T[]>
  /** Given each claimed run, in order; awaited before the next. */
  onClaimed(claimed: T, now: number): unknown
  /** The next page's size now; 0 stops the round (no room left). */
  pageSize(): number
  /** True once the owner stops: the round ends, leaving what it has not handed over. */
  stopped(): boolean
}

/**
 * Claims due runs page by page until a page comes back short, handing each to `onClaimed`:
 * what the engine (its deadlines, runs of an owner that died) and the actor host over shared
 * cells (opening a claimed run's cell) both do. Returns how many were handed over.
 */
export async function claimDue<T>(round: ClaimRound<T>, clock: Clock): Promise<number> {
  let handed = 0
  for (;;) {
    const limit = round.pageSize()
    if (round.stopped() || limit <= 0) return handed
    const now = clock.now()
    const claimed = await round.claim(now, limit)
    for (const one of claimed) {
      if (round.stopped()) return handed
      await round.onClaimed(one, now)
      handed++
    }
    if (claimed.length < limit) return handed
  }
}

export interface ClaimerOptions {
  clock: Clock
  /** How long between rounds. */
  everyMs: number
  /** One round; what it throws goes to `onError`, and the next round comes as usual. */
  round(): Promise<unknown>
  onError(error: unknown): void
}

/**
 * The loop that claims: one round (`claimDue`, and whatever the owner does around it) every
 * `everyMs`, the next armed only when the last ended, until `stop`. An owner that claims
 * nothing (a cell engine whose host claims for it) never starts one.
 */
export class Claimer {
  private timer: unknown
  private running = false
  private stopped = false

  constructor(private readonly options: ClaimerOptions) {}

  /** Arms the first round, `everyMs` from now. */
  start(): void {
    if (this.running || this.stopped) return
    this.running = true
    this.arm(this.options.everyMs)
  }

  stop(): void {
    this.stopped = true
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer)
    this.timer = undefined
  }

  private arm(ms: number): void {
    if (this.stopped) return
    // The round's promise goes back to the clock: a manual clock's `advance` waits for it.
    this.timer = this.options.clock.setTimeout(() => this.tick(), ms)
  }

  private async tick(): Promise<void> {
    this.timer = undefined
    if (this.stopped) return
    try {
      await this.options.round()
    } catch (error) {
      this.options.onError(error)
    }
    this.arm(this.options.everyMs)
  }
}
