import type { Claim, ClaimStore, Clock } from '../../core/ports.js'
import { errorFields, type Logger } from '../logger.js'

/** What one round of claimed work is handed. */
export interface ClaimedRound {
  /** The claim's epoch: the fencing token for whatever the round writes. */
  readonly epoch: number
  /** Whether this process still holds the claim (renewed in time, not taken, not stopped). */
  held(): boolean
  /** Aborted when the claim is lost or the task stops. */
  readonly signal: AbortSignal
}

export interface ClaimedTaskOptions {
  /** The claim's name: 'projector:<name>', 'sweep:retention', 'schedule:<name>', … */
  name: string
  /** How often a round runs while this process holds the claim (and how often it tries to take it). */
  intervalMs: number
  /** How long the claim lasts unrenewed; it is renewed every third of it, during a round too. */
  leaseMs: number
  /** The claimant (default: the engine's owner id). */
  owner?: string
  /** One round of the work; a throw is logged and the next round comes at the interval. */
  work(round: ClaimedRound): unknown
}

export interface ClaimedTask {
  readonly name: string
  /** Whether this process holds the claim now. */
  readonly holding: boolean
  /** Runs a round within `afterMs` (default at once), or right after the one running now. */
  kick(afterMs?: number): void
  /** No more rounds: the running one is aborted and awaited (at most 5 s), the claim let go. */
  stop(): Promise<void>
}

export interface ClaimedTaskHost {
  clock: Clock
  /** The store's claims (`EventStore.claims`). */
  claims: ClaimStore | undefined
  owner: string
  log: Logger
}

/** How long `stop` waits for a round that ignores its abort signal. */
const STOP_WAIT_MS = 5000

/**
 * The engine's claimed background work (docs/architecture.md, "Ownership"): each task runs its
 * rounds only while this process holds the task's claim in the store, so across processes one
 * does the work at a time and a dead process's claim expires. `stop` (the engine's stop) ends
 * every task. The coming schedules, sweeps and admissions start theirs here instead of a loop
 * of their own.
 */
export class ClaimedTasks {
  private readonly tasks = new Set<Task>()

  constructor(private readonly host: ClaimedTaskHost) {}

  /** Starts a task: its first round is tried at once. */
  start(options: ClaimedTaskOptions): ClaimedTask {
    const claims = this.host.claims
    if (!claims) {
      throw new TypeError(
        `claimed task ${options.name}: the store has no claims (memoryStore, sqliteStore and postgresStore have)`,
      )
    }
    const task = new Task(this.host, claims, options, () => this.tasks.delete(task))
    this.tasks.add(task)
    task.kick()
    return task
  }

  /** Stops every task (the engine stops). */
  async stop(): Promise<void> {
    await Promise.allSettled([...this.tasks].map((task) => task.stop()))
  }
}

class Task implements ClaimedTask {
  readonly name: string
  private readonly owner: string
  private readonly renewMs: number
  /** The claim as last taken or renewed, null when not held. */
  private claim: Claim | null = null
  /** When the claim was last taken or renewed (engine clock). */
  private renewedAt = 0
  private timer: unknown
  private timerAt = Number.POSITIVE_INFINITY
  private running: Promise<void> | null = null
  private kicked = false
  /** The claim call in flight, if any (a stop lets it land before letting the claim go). */
  private claiming: Promise<unknown> | null = null
  private halted = false
  private stopping: Promise<void> | null = null
  private abort: AbortController | null = null

  constructor(
    private readonly host: ClaimedTaskHost,
    private readonly claims: ClaimStore,
    private readonly options: ClaimedTaskOptions,
    private readonly forget: () => void,
  ) {
    this.name = options.name
    this.owner = options.owner ?? host.owner
    this.renewMs = Math.max(1, Math.floor(options.leaseMs / 3))
  }

  get holding(): boolean {
    return this.claim !== null && this.host.clock.now() < this.claim.expiresAt
  }

  kick(afterMs = 0): void {
    if (this.halted) return
    if (this.running) {
      this.kicked = true
      return
    }
    this.schedule(afterMs)
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown()
    return this.stopping
  }

  private schedule(ms: number): void {
    const { clock } = this.host
    const at = clock.now() + ms
    if (this.timer !== undefined && this.timerAt <= at) return
    if (this.timer !== undefined) clock.clearTimeout(this.timer)
    this.timerAt = at
    this.timer = clock.setTimeout(() => this.tick(), ms)
  }

  private tick(): void {
    this.timer = undefined
    this.timerAt = Number.POSITIVE_INFINITY
    if (this.halted || this.running) return
    this.running = this.round().finally(() => {
      this.running = null
      if (this.halted) return
      const again = this.kicked
      this.kicked = false
      this.schedule(again ? 0 : this.options.intervalMs)
    })
  }

  /** Takes or renews the claim when due; false when this process does not hold it. */
  private async ensureClaim(): Promise<boolean> {
    const { clock } = this.host
    const now = clock.now()
    if (this.halted) return false
    if (this.holding && now - this.renewedAt < this.renewMs) return true
    const claiming = this.claims.claim(this.name, this.owner, now, now + this.options.leaseMs)
    this.claiming = claiming
    try {
      this.claim = await claiming
      this.renewedAt = now
    } catch (error) {
      // A store outage: the claim, if any, stays ours until it expires.
      const fields = errorFields(error)
      this.host.log.error({ claim: this.name, ...fields }, `claim ${this.name} failed`)
    } finally {
      if (this.claiming === claiming) this.claiming = null
    }
    return this.holding && !this.halted
  }

  private async round(): Promise<void> {
    if (!(await this.ensureClaim())) return
    const claim = this.claim as Claim
    const abort = new AbortController()
    this.abort = abort
    const held = () => this.claim?.epoch === claim.epoch && this.holding && !abort.signal.aborted
    // Renewed while the round runs; a renewal that finds the claim gone aborts the round.
    let renewal: unknown
    const renew = async () => {
      if (abort.signal.aborted) return
      await this.ensureClaim()
      if (held()) renewal = this.host.clock.setTimeout(renew, this.renewMs)
      else abort.abort(new Error(`claim ${this.name} lost`))
    }
    renewal = this.host.clock.setTimeout(renew, this.renewMs)
    try {
      await this.options.work({ epoch: claim.epoch, held, signal: abort.signal })
    } catch (error) {
      const fields = errorFields(error)
      this.host.log.error({ claim: this.name, ...fields }, `claimed work ${this.name} failed`)
    } finally {
      this.host.clock.clearTimeout(renewal)
      this.abort = null
    }
  }

  private async shutdown(): Promise<void> {
    const { clock } = this.host
    this.halted = true
    if (this.timer !== undefined) clock.clearTimeout(this.timer)
    this.timer = undefined
    this.abort?.abort(new Error('stopped'))
    if (this.running) {
      let timer: unknown
      await Promise.race([
        this.running,
        new Promise<void>((resolve) => {
          timer = clock.setTimeout(resolve, STOP_WAIT_MS)
        }),
      ])
      clock.clearTimeout(timer)
    }
    await this.claiming?.catch(() => {})
    const claim = this.claim
    this.claim = null
    this.forget()
    if (claim) await this.claims.release(this.name, this.owner, claim.epoch).catch(() => {})
  }
}
