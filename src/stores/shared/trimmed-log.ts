import { InvalidRequestError, SeqConflictError } from '../../core/errors.js'
import type { TrimmedLog } from '../../core/ports.js'

/**
 * Throws unless `log` is a trimmed log of `runId` a store can write back (`restoreTrimmed`):
 * a snapshot of the run past seq 0, and events of the run numbered from the seq after it
 * without a gap (none for a log trimmed to nothing). Returns the log's head.
 */
export function checkTrimmedLog(runId: string, log: TrimmedLog): number {
  const { snapshot, events } = log
  const fail = (what: string): never => {
    throw new InvalidRequestError(`run ${runId}: a trimmed log to restore ${what}`, { runId })
  }
  if (snapshot?.runId !== runId || !Number.isInteger(snapshot.seq) || snapshot.seq < 1) {
    fail('needs a snapshot of the run past seq 0')
  }
  if (!log.meta) fail('needs the run meta')
  const head = snapshot.seq + 1
  events.forEach((e, i) => {
    if (e.seq !== head + i || e.runId !== runId || e.payload === undefined) {
      fail(`has event seqs that do not continue its snapshot (seq ${head + i} expected)`)
    }
  })
  return head
}

/** A store already holds events of the run: restoring it would fork its log. */
export function runHeldError(runId: string, tail: number): Error {
  return new SeqConflictError(
    `run ${runId}: the store holds its log already (tail ${tail}); a trimmed log is restored only into a store without the run`,
    { runId, expectedSeq: 0, tail },
  )
}

/** The tail a restored trimmed log leaves: its last event, or its snapshot when it has none. */
export function trimmedTail(log: TrimmedLog): number {
  return log.events.at(-1)?.seq ?? log.snapshot.seq
}
