import { defineProjection } from '../../core/module-api.js'

export type NodeStatus =
  | 'running'
  | 'waiting'
  | 'done'
  | 'failed'
  | 'skipped'
  /** Finished, then undone by its compensation (the workflow failed later). */
  | 'compensated'
  /** Finished, and its compensation failed for good (an operator may retry its effect). */
  | 'compensation_failed'

export interface NodeView {
  status: NodeStatus
  /** The directive the node's body returned (`gate`, `invoke`, `sleep`, `map`, …), if any. */
  directive?: string
  /** A fan-out (`ctx.map`): its items, how many have ended, and how many of those failed. */
  items?: { total: number; done: number; failed: number }
  /** Seq of the event that last changed the node. */
  seq: number
}

interface NodesState {
  threads: Record<string, Record<string, NodeView>>
  /** Fan-out items in flight: their effect or child thread → `[threadId, nodeId]`. */
  items?: Record<string, [string, string]>
}

/** Directives that park a node until something outside the run happens. */
const WAITING = new Set(['gate', 'waitFor', 'sleep', 'sleepUntil'])

/** The node of a fan-out item's command key (`item:<nodeId>:<index>`). */
const itemNode = (key: unknown): string | undefined =>
  typeof key === 'string' && key.startsWith('item:')
    ? key.slice(5, key.lastIndexOf(':'))
    : undefined

/**
 * Every workflow thread's nodes as the log left them (`threads[threadId][nodeId]`); a node
 * that has not started is absent (pending). A fan-out node counts its items as their effects
 * and children end. The debugger draws the DAG from it.
 */
export const workflowNodes = defineProjection<NodesState>({
  initial: { threads: {} },
  reduce(state, event) {
    if (event.type.startsWith('runtime.')) return itemProgress(state, event)
    if (!event.type.startsWith('workflow.') || event.threadId === null) return state
    const p = event.payload as {
      nodeId?: unknown
      directive?: { $directive?: unknown; items?: unknown[] }
    }
    if (typeof p?.nodeId !== 'string') return state
    const before = state.threads[event.threadId]?.[p.nodeId]
    let view: NodeView
    switch (event.type) {
      case 'workflow.node.started': {
        const directive = p.directive?.$directive
        view = { status: 'running', seq: event.seq }
        if (typeof directive === 'string') {
          view.directive = directive
          if (WAITING.has(directive)) view.status = 'waiting'
          if (directive === 'map') {
            view.items = { total: p.directive?.items?.length ?? 0, done: 0, failed: 0 }
          }
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
      case 'workflow.node.compensated':
        view = Object.assign({}, before, { status: 'compensated' as const, seq: event.seq })
        break
      case 'workflow.compensation.failed':
        view = Object.assign({}, before, { status: 'compensation_failed' as const, seq: event.seq })
        break
      default:
        return state
    }
    if (before?.items && view.status !== 'running') {
      view.directive = before.directive
      view.items = before.items
    }
    return withNode(state, event.threadId, p.nodeId, view)
  },
})

function withNode(state: NodesState, threadId: string, nodeId: string, view: NodeView) {
  const nodes = Object.assign({}, state.threads[threadId], { [nodeId]: view })
  return Object.assign({}, state, {
    threads: Object.assign({}, state.threads, { [threadId]: nodes }),
  })
}

/** A fan-out item's effect or child thread began or ended: the node's item counts. */
function itemProgress(
  state: NodesState,
  event: { type: string; payload: unknown; threadId: string | null; effectId?: string },
): NodesState {
  const p = event.payload as {
    effectId?: string
    threadId?: string
    parentThreadId?: string
    key?: unknown
    final?: boolean
  }
  switch (event.type) {
    case 'runtime.effect.requested':
    case 'runtime.thread.started': {
      const nodeId = itemNode(p.key)
      const owner = event.type === 'runtime.effect.requested' ? event.threadId : p.parentThreadId
      const id = event.type === 'runtime.effect.requested' ? p.effectId : p.threadId
      if (nodeId === undefined || !owner || !id) return state
      const items = Object.assign({}, state.items, { [id]: [owner, nodeId] as [string, string] })
      return Object.assign({}, state, { items })
    }
    case 'runtime.effect.completed':
    case 'runtime.effect.cancelled':
      return itemEnded(state, p.effectId, event.type === 'runtime.effect.cancelled')
    case 'runtime.effect.failed':
      return p.final ? itemEnded(state, p.effectId, true) : state
    case 'runtime.thread.completed':
    case 'runtime.thread.failed':
    case 'runtime.thread.cancelled':
      return itemEnded(state, p.threadId, event.type !== 'runtime.thread.completed')
    default:
      return state
  }
}

function itemEnded(state: NodesState, id: string | undefined, failed: boolean): NodesState {
  const item = id === undefined ? undefined : state.items?.[id]
  if (!item || id === undefined) return state
  const [threadId, nodeId] = item
  const items = Object.assign({}, state.items)
  delete items[id]
  const view = state.threads[threadId]?.[nodeId]
  const next = Object.assign({}, state, { items })
  if (!view?.items) return next
  const counts = {
    total: view.items.total,
    done: view.items.done + 1,
    failed: view.items.failed + (failed ? 1 : 0),
  }
  return withNode(next, threadId, nodeId, Object.assign({}, view, { items: counts }))
}
