// The public shapes of schedules and wait URLs on the engine (docs/schedules.md), apart from
// the code that implements them, so the engine's types and options import no implementation.
import type { RunState } from '../core/envelope.js'
import type { Json } from '../core/json.js'
import type { WaitUrlStore } from '../core/ports.js'
import type { BackfillResult, ScheduleInfo } from '../core/schedule-types.js'
import type { ScheduleDefinition, ScheduleOptions } from './schedule-spec.js'

/** What `update` takes: any field of the options but the name. */
export type ScheduleUpdate = Partial<Omit<ScheduleOptions, 'name'>>

/** `engine.schedules` (docs/schedules.md): durable in the store, the same on every host. */
export interface EngineSchedules {
  list(): Promise<ScheduleInfo[]>
  get(name: string): Promise<ScheduleInfo>
  create(schedule: ScheduleOptions | ScheduleDefinition): Promise<ScheduleInfo>
  update(name: string, patch: ScheduleUpdate): Promise<ScheduleInfo>
  pause(name: string): Promise<ScheduleInfo>
  resume(name: string): Promise<ScheduleInfo>
  delete(name: string): Promise<void>
  /** Starts a run now, outside the ticks; overlap does not apply. */
  trigger(name: string): Promise<{ runId: string; state: RunState | null }>
  /** Starts the run of every tick in `[from, to]` not started yet (at most 1,000 ticks). */
  backfill(name: string, range: { from: number; to: number }): Promise<BackfillResult>
}

/** `createEngine({ scheduleOptions })`: how schedules are ticked (docs/schedules.md). */
export interface ScheduleTickerOptions {
  /** The longest sleep between looks at the store; default 1000 ms. */
  pollMs?: number
  /** How long the ticker's claim lasts without renewal; default 10 000 ms. */
  leaseMs?: number
  /**
   * A gap with no host ticking longer than this is an outage, whose ticks follow each
   * schedule's `catchUp`; shorter gaps (a failover) start every tick late. Default 30 000 ms.
   */
  graceMs?: number
  /** Run no ticker in this process (it still changes and lists schedules). */
  disabled?: boolean
}

/** `createEngine({ waitUrls })` (docs/schedules.md, "Wait URLs"). */
export interface WaitUrlConfig {
  /**
   * What URLs start with: the public address of this API, e.g. `https://hooks.example.com`.
   * Default: none, so `url` is the path alone (`/wait-urls/<token>`).
   */
  baseUrl?: string
  /** The host's HMAC secret for URLs made with `signature: {}` (no secret of their own). */
  signatureSecret?: string
}

/** The wait URLs part of an engine's context: the token store and the config. */
export interface WaitUrls {
  store: WaitUrlStore
  baseUrl: string
  signatureSecret?: string
}

/** What a POST to a wait URL brought. */
export interface WaitUrlRequest {
  body: Json
  /** The raw body text (the signature is over it). */
  text: string
  header(name: string): string | null
}

/** What a POST to a wait URL did. */
export interface WaitUrlOutcome {
  runId: string
  /** False only for a repeat POST to a URL made with `singleUse: false`. */
  completed: boolean
  tokenId: string
  /**
   * False on a host that does not register the run's definition version: the body is checked
   * and recorded, and a host that registers it completes the wait (docs/deploys.md).
   */
  executing?: false
  /** Why this host did not complete the wait itself. */
  reason?: string
}
