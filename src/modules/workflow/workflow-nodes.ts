import { defineProjection } from '../../core/module-api.js'

export type NodeStatus = 'running' | 'waiting' | 'done' | 'failed' | 'skipped'

export interface NodeView {
  status: NodeStatus
  /** The directive the node's body returned (`gate`, `invoke`, `sleep`, …), if any. */
  directive?: string
  /** Seq of the event that last changed the node. */
  seq: number
}

/** Directives that park a node until something outside the run happens. */
const WAITING = new Set(['gate', 'waitFor', 'sleep', 'sleepUntil'])

/**
 * Every workflow thread's nodes as the log left them (`threads[threadId][nodeId]`); a node
 * that has not started is absent (pending). The debugger draws the DAG from it.
 */
export const workflowNodes = defineProjection<{
  threads: Record<string, Record<string, NodeView>>
}>({
  initial: { threads: {} },
  reduce(state, event) {
    if (!event.type.startsWith('workflow.node.') || event.threadId === null) return state
    const p = event.payload as { nodeId?: unknown; directive?: { $directive?: unknown } }
    if (typeof p?.nodeId !== 'string') return state
    let view: NodeView
    switch (event.type) {
      case 'workflow.node.started': {
        const directive = p.directive?.$directive
        view = { status: 'running', seq: event.seq }
        if (typeof directive === 'string') {
          view.directive = directive
          if (WAITING.has(directive)) view.status = 'waiting'
        }
        break
      }
      case 'workflow.node.finished':
        view = { status: 'done', seq: event.seq }
        break
      case 'workflow.node.skipped':
        view = { status: 'skipped', seq: event.seq }
        break
      case 'workflow.node.failed':
        view = { status: 'failed', seq: event.seq }
        break
      default:
        return state
    }
    const nodes = Object.assign({}, state.threads[event.threadId], { [p.nodeId]: view })
    return { threads: Object.assign({}, state.threads, { [event.threadId]: nodes }) }
  },
})
