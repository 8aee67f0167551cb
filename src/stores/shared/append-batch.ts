import type { EventEnvelope } from '../../core/envelope.js'
import { InvalidRequestError } from '../../core/errors.js'
import type { AppendOptions } from '../../core/ports.js'

/** One `append` call waiting in a store's group commit. */
export interface AppendRequest {
  runId: string
  events: readonly EventEnvelope[]
  options: AppendOptions
  resolve: () => void
  reject: (error: unknown) => void
}

/** Throws unless the batch's seqs continue the log from `expectedSeq`, all of `runId`. */
export function checkBatch(
  runId: string,
  events: readonly EventEnvelope[],
  expectedSeq: number,
): void {
  for (let i = 0; i < events.length; i++) {
    const e = events[i]
    if (e.seq !== expectedSeq + i + 1 || e.runId !== runId || e.payload === undefined) {
      throw new InvalidRequestError(`run ${runId}: batch seqs must continue the log`, {
        runId,
        expectedSeq,
        index: i,
      })
    }
  }
}
