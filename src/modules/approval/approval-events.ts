import type { EventInput } from '../../core/envelope.js'
import type { Json } from '../../core/json.js'
import { shape } from '../shared/shape.js'

export interface ApprovalAction {
  id: string
  label?: string
  outcome: string
}

export interface ApprovalRequested {
  approvalId: string
  threadId: string
  title: string
  description?: string
  actions: ApprovalAction[]
  timeoutAt?: number
}

/** The payload of `approval.decided`, and what a gate resolves with. */
export interface ApprovalDecision {
  approvalId: string
  outcome: string
  actionId?: string
  payload?: Json
  by?: Json
}

export const DEFAULT_ACTIONS: ApprovalAction[] = [
  { id: 'approve', label: 'Approve', outcome: 'approve' },
  { id: 'reject', label: 'Reject', outcome: 'reject' },
]

export const approvalEvents = {
  requested: shape<ApprovalRequested>({
    approvalId: 'string',
    threadId: 'string',
    title: 'string',
    description: 'string?',
    actions: 'any',
    timeoutAt: 'number?',
  }),
  decided: shape<ApprovalDecision>({
    approvalId: 'string',
    outcome: 'string',
    actionId: 'string?',
    payload: 'any?',
    by: 'any?',
  }),
  timed_out: shape<{ approvalId: string }>({ approvalId: 'string' }),
}

/**
 * The signal that decides an approval.
 *
 * @example
 * await engine.signal(runId, [decision(approvalId, 'approve')])
 * await engine.signal(runId, [decision(approvalId, { actionId: 'edit', outcome: 'approve', payload: { text } })])
 */
export function decision(
  approvalId: string,
  choice: 'approve' | 'reject' | { actionId?: string; outcome: string; payload?: Json; by?: Json },
): EventInput {
  const payload: Record<string, Json> =
    typeof choice === 'string'
      ? { approvalId, outcome: choice, actionId: choice }
      : { approvalId, outcome: choice.outcome }
  if (typeof choice === 'object') {
    if (choice.actionId !== undefined) payload.actionId = choice.actionId
    if (choice.payload !== undefined) payload.payload = choice.payload
    if (choice.by !== undefined) payload.by = choice.by
  }
  return { type: 'approval.decided', payload }
}
