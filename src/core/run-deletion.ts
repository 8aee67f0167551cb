import type { EventEnvelope, RunStatus } from './envelope.js'

/** The feed entry's type that says a run was deleted (docs/data-lifecycle.md). */
export const RUN_DELETED = 'runtime.run.deleted'

/** What the deletion record carries: never anything of the run's payloads. */
export interface RunDeletedPayload {
  /** `'request'` (deleteRun) or `'retention'`. */
  reason: string
  /** The deleted log's last seq. */
  tail: number
}

/** The statuses a run is finished in: only these are deleted without `force`. */
export const FINISHED_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled']

/**
 * The deletion as projectors read it: an envelope of `runId` with seq `tail + 1` (after every
 * event of the run the projector saw), at the deletion's time. Its id names its feed position.
 */
export function deletionRecord(
  runId: string,
  tail: number,
  at: number,
  reason: string,
  position: number,
): EventEnvelope {
  const payload: RunDeletedPayload = { reason, tail }
  return {
    id: `deleted-${position}`,
    runId,
    seq: tail + 1,
    ts: at,
    type: RUN_DELETED,
    payload: payload as unknown as EventEnvelope['payload'],
    threadId: null,
    origin: 'runtime',
  }
}
