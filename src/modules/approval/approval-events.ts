import { defineInput, type EventInput, type Json } from '../../core/module-api.js'
import { shape } from '../shared/shape.js'
import { type ApprovalDecision, acceptDecision } from './accept-decision.js'

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

export const DEFAULT_ACTIONS: ApprovalAction[] = [
  { id: 'approve', label: 'Approve', outcome: 'approve' },
  { id: 'reject', label: 'Reject', outcome: 'reject' },
]

/** What a decision may say, before the engine records who sent it. */
const decisionInput = shape<Omit<ApprovalDecision, 'by'>>(
  {
    approvalId: 'string',
    outcome: 'string',
    actionId: 'string?',
    payload: 'any?',
    name: 'string?',
  },
  {
    closed: true,
    forbidden: {
      by: 'by is recorded by the engine from the caller’s identity; send a display name as name',
    },
  },
)

export const approvalEvents = {
  requested: shape<ApprovalRequested>({
    approvalId: 'string',
    threadId: 'string',
    title: 'string',
    description: 'string?',
    actions: 'any',
    timeoutAt: 'number?',
  }),
  decided: defineInput(decisionInput, { accept: acceptDecision }),
  timed_out: shape<{ approvalId: string }>({ approvalId: 'string' }),
}

/**
 * The signal that decides an approval: by outcome (`'approve'`, `'reject'` or a custom
 * action's outcome), or naming one of the gate's actions.
 *
 * @example
 * await engine.signal(runId, [decision(approvalId, 'approve')])
 * await engine.signal(runId, [decision(approvalId, { actionId: 'edit', outcome: 'approve', payload: { text } })])
 */
export function decision(
  approvalId: string,
  choice:
    | 'approve'
    | 'reject'
    | { actionId?: string; outcome: string; payload?: Json; name?: string },
): EventInput {
  const payload: Record<string, Json> = {
    approvalId,
    outcome: typeof choice === 'string' ? choice : choice.outcome,
  }
  if (typeof choice === 'object') {
    if (choice.actionId !== undefined) payload.actionId = choice.actionId
    if (choice.payload !== undefined) payload.payload = choice.payload
    if (choice.name !== undefined) payload.name = choice.name
  }
  return { type: 'approval.decided', payload }
}
