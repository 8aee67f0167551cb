/** How an effect's failed attempts are retried. Attempts count the first try. */
export interface RetryPolicy {
  maxAttempts?: number
  /** Delay before the second attempt. */
  backoffMs?: number
  /** Growth factor per attempt (default 2). */
  multiplier?: number
  /** Cap on any single delay (default 60 s). */
  maxBackoffMs?: number
}

export interface ResolvedRetryPolicy {
  maxAttempts: number
  backoffMs: number
  multiplier: number
  maxBackoffMs: number
}

export const DEFAULT_RETRY: ResolvedRetryPolicy = {
  maxAttempts: 3,
  backoffMs: 100,
  multiplier: 2,
  maxBackoffMs: 60_000,
}

export function resolveRetry(
  policy: RetryPolicy | undefined,
  fallback: ResolvedRetryPolicy = DEFAULT_RETRY,
): ResolvedRetryPolicy {
  return {
    maxAttempts: Math.max(1, Math.floor(policy?.maxAttempts ?? fallback.maxAttempts)),
    backoffMs: Math.max(0, policy?.backoffMs ?? fallback.backoffMs),
    multiplier: Math.max(1, policy?.multiplier ?? fallback.multiplier),
    maxBackoffMs: Math.max(0, policy?.maxBackoffMs ?? fallback.maxBackoffMs),
  }
}

/**
 * Delay before attempt `nextAttempt` (2, 3, …): capped exponential backoff, no jitter so the
 * log is reproducible from the policy. `null` when the policy allows no further attempt.
 */
export function backoffDelay(policy: ResolvedRetryPolicy, nextAttempt: number): number | null {
  if (nextAttempt > policy.maxAttempts) return null
  const exponent = Math.max(0, nextAttempt - 2)
  const delay = policy.backoffMs * policy.multiplier ** exponent
  return Math.min(policy.maxBackoffMs, Math.round(delay))
}

/** A retry loop's delays: `initialMs` after the first failure, doubling, never above `maxMs`. */
export interface Backoff {
  initialMs: number
  maxMs: number
}

/**
 * The delay before retry `failures` (1, 2, …) of a loop that retries something until it works
 * (a reconnect, a claim poll, a store call): capped doubling, no jitter. Every such loop in the
 * code asks this (an effect's attempts use `backoffDelay`, their policy's own).
 */
export function backoffAfter(failures: number, { initialMs, maxMs }: Backoff): number {
  return Math.min(maxMs, initialMs * 2 ** Math.min(30, Math.max(0, failures - 1)))
}
