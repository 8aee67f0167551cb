import type { EventEnvelope } from '../core/envelope.js'
import type { Json } from '../core/json.js'

/** Envelopes `fromSeq..fromSeq+count-1` of one run, with optional fields left out. */
export function makeEnvelopes(
  runId: string,
  fromSeq: number,
  count: number,
  payload: (seq: number) => Json = (seq) => ({ n: seq }),
): EventEnvelope[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `${runId}-e${fromSeq + i}`,
    runId,
    seq: fromSeq + i,
    ts: 1_700_000_000_000 + fromSeq + i,
    type: 'test.event',
    payload: payload(fromSeq + i),
    threadId: null,
    origin: 'runtime' as const,
  }))
}
