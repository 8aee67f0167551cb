import { Cron } from 'croner'
import { digest128 } from '../core/digest.js'

/**
 * Tick times of schedules. Cron expressions and time zones are croner's (docs/decisions.md,
 * "Schedules: croner for cron and time zones"): a tick in an hour that a DST change skips fires
 * once, at the first valid time after the gap; a tick in an hour that repeats fires once.
 * `every` periods tick at whole multiples of the period since the epoch, in UTC, so every host
 * and every restart agree on the ticks without remembering when the schedule was made.
 */

const NICKNAMES = new Set([
  '@yearly',
  '@annually',
  '@monthly',
  '@weekly',
  '@daily',
  '@hourly',
  '@midnight',
])

/** Zones found valid: a schedule's spec is checked on every tick, and Intl is slow to ask. */
const knownZones = new Set<string>()

/** Whether `timezone` is an IANA time zone name this Node knows. */
export function checkTimezone(timezone: string): boolean {
  if (knownZones.has(timezone)) return true
  if (timezone.length === 0 || timezone.length > 100) return false
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone })
  } catch {
    return false
  }
  knownZones.add(timezone)
  return true
}

/** Zones with no offset ever: croner computes them without Intl (same ticks, ~14× faster). */
const UTC_ZONES = new Set(['UTC', 'Etc/UTC'])

/** What is wrong with a cron expression (a sentence), or undefined when it is fine. */
export function checkCron(expression: string, timezone: string): string | undefined {
  const text = expression.trim()
  const fields = text.split(/\s+/)
  if (text.startsWith('@')) {
    if (!NICKNAMES.has(text.toLowerCase())) {
      return `the nicknames are ${[...NICKNAMES].join(', ')}`
    }
  } else if (fields.length !== 5 && fields.length !== 6) {
    return `it has ${fields.length} field(s); a cron expression has 5 (minute hour day-of-month month day-of-week) or 6 (a second first)`
  }
  let cron: Cron
  try {
    cron = new Cron(text, { timezone, paused: true })
  } catch (error) {
    return (error as Error)?.message ?? String(error)
  }
  if (cron.nextRun() === null) return 'it never fires'
  return undefined
}

/** What computing a schedule's ticks needs of its spec. */
export interface TickRule {
  name: string
  cron: string | null
  every: number | null
  timezone: string
  jitterMs: number
}

/**
 * Computes ticks. One per engine: it keeps each cron expression parsed (10,000 schedules
 * parse once, not on every tick).
 */
export class Ticks {
  private readonly parsed = new Map<string, Cron>()

  /** The first tick strictly after `after` (ms), or null when the rule never fires again. */
  next(rule: TickRule, after: number): number | null {
    if (rule.every !== null) return (Math.floor(after / rule.every) + 1) * rule.every
    const next = this.cron(rule).nextRun(new Date(after))
    return next ? next.getTime() : null
  }

  /**
   * The ticks in `(after, until]`, oldest first, at most `limit` (the latest ones when there
   * are more, with `skipped` saying how many older ones were left out).
   */
  between(
    rule: TickRule,
    after: number,
    until: number,
    limit: number,
  ): { ticks: number[]; skipped: number } {
    const ticks: number[] = []
    let skipped = 0
    let from = after
    if (rule.every !== null) {
      // A period's ticks are arithmetic: start at the first of the latest `limit` + 1.
      const start = Math.max(after, until - (limit + 1) * rule.every)
      skipped = Math.max(0, Math.floor(start / rule.every) - Math.floor(after / rule.every))
      from = start
    }
    let at = this.next(rule, from)
    while (at !== null && at <= until) {
      ticks.push(at)
      if (ticks.length > limit) {
        ticks.shift()
        skipped++
      }
      at = this.next(rule, at)
    }
    return { ticks, skipped }
  }

  private cron(rule: TickRule): Cron {
    const key = `${rule.timezone} ${rule.cron}`
    let cron = this.parsed.get(key)
    if (!cron) {
      const zone = UTC_ZONES.has(rule.timezone) ? { utcOffset: 0 } : { timezone: rule.timezone }
      cron = new Cron(rule.cron as string, { ...zone, paused: true })
      this.parsed.set(key, cron)
    }
    return cron
  }
}

/**
 * When a tick fires: its time plus the schedule's jitter for it, a spread in `[0, jitterMs)`
 * drawn from the schedule's name and the tick, so every host computes the same one.
 */
export function fireTime(rule: TickRule, tick: number): number {
  if (rule.jitterMs <= 0) return tick
  const draw = Number.parseInt(digest128(`${rule.name}@${tick}`).slice(0, 8), 16)
  return tick + (draw % rule.jitterMs)
}

/**
 * The id of the run a tick starts: the schedule's name and the tick's time, so a tick is
 * started once whatever the number of hosts, restarts or retries (a second start of the same
 * id is a no-op). `sched:invoice-sweep:2025-03-03T08:00:00.000Z`.
 */
export function tickRunId(schedule: string, tick: number): string {
  return `sched:${schedule}:${new Date(tick).toISOString()}`
}

/** The id of a run an operator triggered at `at` (`engine.schedules.trigger`). */
export function triggerRunId(schedule: string, at: number): string {
  return `sched:${schedule}:manual:${new Date(at).toISOString()}`
}

/** The prefix of every run id of a schedule (to list its runs). */
export const scheduleRunPrefix = (schedule: string): string => `sched:${schedule}:`
