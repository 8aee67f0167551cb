import { SSE_KEEPALIVE_MS } from './wire/sse-format.js'

/** Timer source of SSE streams: keepalives and drain deadlines (tests inject a manual one). */
/** Bounds of live event streams (docs/http.md, "Limits of live streams"). */
export interface SseOptions {
  /** Interval between `: keepalive` comments (default 15 s). */
  keepaliveMs?: number
  /**
   * A consumer that leaves written frames untaken this long is dropped, its queued frames
   * discarded; it resumes with Last-Event-ID and loses nothing (default 30 s).
   */
  drainTimeoutMs?: number
  /** Bytes queued for one consumer before a live event ends its stream (default 4 MiB). */
  maxBufferedBytes?: number
  /** Frames queued for one consumer before a live event ends its stream (default 1,000). */
  maxBufferedEvents?: number
  /** Bytes queued across all streams; past it, streams holding some are dropped (default 64 MiB). */
  maxTotalBufferedBytes?: number
  /** Bytes one catch-up page may hold even if every event is `maxEventBytes` (default 4 MiB). */
  pageBytes?: number
  /** Most events one catch-up page reads (default 500). */
  pageSize?: number
}

export interface SseTimers {
  setInterval(callback: () => void, ms: number): unknown
  clearInterval(handle: unknown): void
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

/** Every SSE bound, resolved (docs/http.md, "Limits of live streams"). */
export type SseLimits = Required<SseOptions>

const MIB = 1024 * 1024

export const SSE_DEFAULTS: SseLimits = {
  keepaliveMs: SSE_KEEPALIVE_MS,
  drainTimeoutMs: 30_000,
  maxBufferedBytes: 4 * MIB,
  maxBufferedEvents: 1000,
  maxTotalBufferedBytes: 64 * MIB,
  pageBytes: 4 * MIB,
  pageSize: 500,
}

/** Defaults filled in; anything but a positive integer is a TypeError naming the option. */
export function resolveSseLimits(options: SseOptions = {}): SseLimits {
  const out = { ...SSE_DEFAULTS }
  for (const key of Object.keys(SSE_DEFAULTS) as Array<keyof SseLimits>) {
    const value = options[key]
    if (value === undefined) continue
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new TypeError(`http.sse.${key} must be a positive integer, got ${String(value)}`)
    }
    out[key] = value
  }
  return out
}

/**
 * How many events one catch-up page reads: as many as `pageBytes` holds if every event were
 * as large as the engine allows, at most `pageSize`, at least one. A page is read in one go (a
 * store builds every event of it), so only a bound that holds for the largest events keeps
 * one connection's page, and the time to build it, small.
 */
export const pageLimit = (limits: SseLimits, maxEventBytes: number): number =>
  Math.max(1, Math.min(limits.pageSize, Math.floor(limits.pageBytes / maxEventBytes)))

export const defaultTimers: SseTimers = {
  setInterval: (callback, ms) => {
    const handle = setInterval(callback, ms)
    // A keepalive alone must not keep a process alive.
    handle.unref?.()
    return handle
  },
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
  setTimeout: (callback, ms) => {
    const handle = setTimeout(callback, ms)
    handle.unref?.()
    return handle
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}
