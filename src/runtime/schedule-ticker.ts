import type { Clock, ScheduleRecord, ScheduleStore, ScheduleWrite } from '../core/ports.js'
import { errorFields, type Logger } from './logger.js'
import type { Ticks } from './schedule-ticks.js'
import { runDue, type ScheduleHost } from './tick-runner.js'

/**
 * The claim the ticker works under: one process at a time ticks the store's schedules
 * (docs/decisions.md, "Schedules: one ticker per store under one claim").
 */
export interface TickerClaim {
  /** Takes or renews the claim at `now`: its epoch, or null while another process holds it. */
  hold(now: number): Promise<number | null>
  /** Lets it go (stop), so another process takes over at once. */
  release(): Promise<void>
}

export interface TickerOptions {
  /** The longest sleep between looks at the store (new schedules, other hosts' changes). */
  pollMs: number
  /** A gap with no ticker longer than this is an outage: `catchUp` decides its ticks. */
  graceMs: number
  /** Due schedules read per query. */
  batch: number
  /** Due schedules worked at once. */
  concurrency: number
}

/**
 * Ticks the store's schedules while it holds the claim: sleeps until the earliest due schedule
 * (or `pollMs`), starts the runs of its due ticks (tick-runner.ts) and writes each schedule's
 * progress with a compare-and-set. Exactly-once does not rest on the claim: a tick's run has a
 * deterministic id, so a tick two processes both start is started once.
 */
export class ScheduleTicker {
  private timer: unknown
  private epoch: number | null = null
  /** Set by a take-over after an outage, until a pass has worked every due schedule. */
  private outageFrom: number | null = null
  private markedAt = Number.NEGATIVE_INFINITY
  private passing: Promise<void> | undefined
  private again = false
  private stopped = false

  constructor(
    private readonly store: ScheduleStore,
    private readonly host: ScheduleHost,
    private readonly ticks: Ticks,
    private readonly claim: TickerClaim,
    private readonly clock: Clock,
    private readonly options: TickerOptions,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.schedule(0)
  }

  /** Looks at the store now (a schedule was created or changed here). */
  kick(): void {
    if (this.stopped) return
    if (this.passing) {
      this.again = true
      return
    }
    this.schedule(0)
  }

  /** Whether this process ticks the schedules now. */
  get holding(): boolean {
    return this.epoch !== null
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer)
    await this.passing
    if (this.epoch !== null) await this.claim.release().catch(() => {})
    this.epoch = null
  }

  /** One pass now (tests drive a manual clock through it). */
  passNow(): Promise<void> {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer)
    this.timer = undefined
    return this.runPass()
  }

  private schedule(ms: number): void {
    if (this.stopped) return
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer)
    // Returns the pass, so a manual clock's advance waits for it.
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined
      return this.runPass()
    }, ms)
  }

  private runPass(): Promise<void> {
    if (this.passing) {
      this.again = true
      return this.passing
    }
    const passing = this.pass().then(
      (delay) => delay,
      (error) => {
        const fields = errorFields(error)
        this.log.error(fields, `schedules: a pass failed; retrying in ${this.options.pollMs} ms`)
        return this.options.pollMs
      },
    )
    this.passing = passing.then((delay) => {
      this.passing = undefined
      const again = this.again
      this.again = false
      this.schedule(again ? 0 : delay)
    })
    return this.passing
  }

  /** One pass; resolves with how long to sleep before the next. */
  private async pass(): Promise<number> {
    const { pollMs, graceMs } = this.options
    if (this.stopped) return pollMs
    const now = this.clock.now()
    const epoch = await this.claim.hold(now)
    if (epoch === null) {
      this.epoch = null
      return pollMs
    }
    if (epoch !== this.epoch) {
      // Taken (first, or again after losing it): was nobody ticking for longer than the grace?
      const mark = await this.store.readMark()
      this.outageFrom = mark !== null && now - mark > graceMs ? mark : null
      if (this.outageFrom !== null) {
        this.log.warn(
          { since: this.outageFrom, gapMs: now - this.outageFrom },
          `schedules: no host ticked for ${now - this.outageFrom} ms; ticks of that outage follow each schedule's catchUp`,
        )
      }
      this.epoch = epoch
    }
    if (now - this.markedAt >= Math.min(1000, graceMs / 4)) {
      await this.store.writeMark(now)
      this.markedAt = now
    }
    const attendedUntil = this.outageFrom ?? now
    for (;;) {
      const due = await this.store.due(now, this.options.batch)
      const written = await this.work(due, now, attendedUntil)
      // A full page that moved nothing (each failed, or changed meanwhile): the next pass.
      if (due.length < this.options.batch || written === 0 || this.stopped) break
    }
    this.outageFrom = null
    const next = await this.store.nextWakeAt()
    if (next === null) return pollMs
    return Math.max(0, Math.min(pollMs, next - this.clock.now()))
  }

  /**
   * Works the due schedules and writes their progress in one call (one transaction: a page of
   * schedules costs one fsync, not one each); resolves with how many it moved on.
   */
  private async work(rows: ScheduleRecord[], now: number, attendedUntil: number): Promise<number> {
    const writes: ScheduleWrite[] = []
    let i = 0
    const worker = async () => {
      while (i < rows.length && !this.stopped) {
        const row = rows[i++] as ScheduleRecord
        try {
          const next = await runDue(
            this.host,
            this.ticks,
            row,
            now,
            attendedUntil,
            this.options.pollMs,
          )
          writes.push({ record: next, expectedVersion: row.version })
        } catch (error) {
          const fields = errorFields(error)
          this.log.error(
            { schedule: row.name, ...fields },
            `schedule ${row.name}: its due ticks failed; retrying on the next pass`,
          )
        }
      }
    }
    const n = Math.min(this.options.concurrency, rows.length)
    await Promise.all(Array.from({ length: n }, worker))
    if (writes.length === 0) return 0
    // A schedule changed meanwhile (paused, updated, deleted on some host) is not written: the
    // runs started stand, and the next pass reads it again.
    return (await this.store.updateMany(writes)).filter(Boolean).length
  }
}
