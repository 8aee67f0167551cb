import type { AdmitResult } from '../../core/ports.js'

/**
 * The answer to an `enqueueAll` admission (docs/flow-control.md): its rounds, one per entry in
 * order, as one round's answer: every run admitted, in order, and the rate window's next
 * admission as the last round saw it.
 */
export function mergeRounds(rounds: readonly AdmitResult[]): AdmitResult {
  const merged: AdmitResult = { admitted: rounds.flatMap((r) => r.admitted) }
  const retryAt = rounds.at(-1)?.retryAt
  if (retryAt !== undefined) merged.retryAt = retryAt
  return merged
}
