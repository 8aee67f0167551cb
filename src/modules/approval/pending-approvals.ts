import { defineProjection } from '../../core/module-api.js'

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'timed_out' | string

export interface ApprovalItem {
  approvalId: string
  threadId: string
  title: string
  status: ApprovalStatus
}

const statusOf = (outcome: string): ApprovalStatus =>
  outcome === 'approve' ? 'approved' : outcome === 'reject' ? 'rejected' : outcome

/**
 * Every approval of a run with its status: `pending` until decided (first decision wins) or
 * timed out. A run reports `running` while an approval is pending: read this for the queue.
 */
export const pendingApprovals = defineProjection<{ items: ApprovalItem[] }>({
  initial: { items: [] },
  reduce(state, event) {
    const p = event.payload as any
    switch (event.type) {
      case 'approval.requested':
        return {
          items: [
            ...state.items,
            { approvalId: p.approvalId, threadId: p.threadId, title: p.title, status: 'pending' },
          ],
        }
      case 'approval.decided':
      case 'approval.timed_out': {
        const status = event.type === 'approval.timed_out' ? 'timed_out' : statusOf(p.outcome)
        let changed = false
        const items = state.items.map((item) => {
          if (item.approvalId !== p.approvalId || item.status !== 'pending') return item
          changed = true
          return { ...item, status }
        })
        return changed ? { items } : state
      }
      default:
        return state
    }
  },
})
