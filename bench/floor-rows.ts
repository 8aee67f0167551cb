// What the raw-driver floors (sqlite-engine.ts, postgres-floor.ts) write for a 3-step run: its
// 19 event types, one commit per step, and the rows' sizes, small or Skein's.

const STEP = [
  'workflow.node.started',
  'runtime.effect.requested',
  'runtime.effect.attempt.started',
  'runtime.effect.completed',
  'workflow.node.finished',
]

/** The event types of each step's commit. */
export const STEPS = [
  ['runtime.run.started', 'runtime.thread.started', ...STEP],
  STEP,
  [...STEP, 'runtime.thread.completed', 'runtime.run.completed'],
]

/**
 * What the raw loop's rows hold. `small`: the floor the ratios are taken against (short ids, a
 * constant thread, a ~30-byte payload, a run row with only its tail). `skein`: rows the size of
 * the ones Skein writes for the same run (a 40-character run id; 16-character event, thread and
 * effect ids where Skein's events have them; each event type's payload padded to the length
 * Skein's has; the run row's status, definition, times and lease, set as each commit sets
 * them), so the cost of what Skein records can be told from the cost of how it writes it.
 */
export type FloorRows = 'small' | 'skein'

/** Payload length of each event type in Skein's 3-step run (measured from its log). */
const SKEIN_PAYLOAD: Record<string, number> = {
  'runtime.run.started': 179,
  'runtime.thread.started': 177,
  'workflow.node.started': 89,
  'runtime.effect.requested': 131,
  'runtime.effect.attempt.started': 43,
  'runtime.effect.completed': 60,
  'workflow.node.finished': 32,
  'runtime.thread.completed': 81,
  'runtime.run.completed': 51,
}

/** A JSON payload of `length` characters. */
const paddedPayload = (seq: number, length: number) => {
  const head = JSON.stringify({ step: seq, pad: '' })
  return JSON.stringify({ step: seq, pad: 'x'.repeat(Math.max(0, length - head.length)) })
}

/** The run id of the floor's run number `n`. */
export const floorRunId = (rows: FloorRows, n: number) =>
  rows === 'skein' ? `run_01a226cb-9d6f-74b3-a942-${String(n).padStart(12, '0')}` : `floor-${n}`

/** One event row's variable columns, as the floor writes them for `rows`. */
export interface FloorEvent {
  id: string
  payload: string
  /** null for Skein's run-level events. */
  thread: string | null
  /** null except for effect events. */
  effect: string | null
}

export function floorEvent(
  rows: FloorRows,
  runId: string,
  step: number,
  seq: number,
  type: string,
): FloorEvent {
  if (rows === 'small')
    return {
      id: `${runId}-${seq}`,
      payload: JSON.stringify({ step: seq, runId }),
      thread: 't',
      effect: null,
    }
  const runLevel = type === 'runtime.run.started' || type === 'runtime.run.completed'
  return {
    id: `evt_${runId.slice(-8)}${String(seq).padStart(4, '0')}`,
    payload: paddedPayload(seq, SKEIN_PAYLOAD[type]),
    thread: runLevel ? null : `thr_${runId.slice(-12)}`,
    effect: type.startsWith('runtime.effect.') ? `eff_${runId.slice(-8)}${step}000` : null,
  }
}
