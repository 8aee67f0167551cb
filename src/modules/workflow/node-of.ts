import type { EventEnvelope } from '../../core/module-api.js'

/** Command keys a node issues: its body (`run:`), its directive (`do:`, `send:`), its items. */
const NODE_KEY = /^(?:run|do|send):(.+)$/
const ITEM_KEY = /^item:(.+):\d+$/

/**
 * The workflow node an event of its thread belongs to (the kind's `nodeOf`): a node event's
 * `nodeId`, or the node of the command key an effect, wait or child thread was recorded under.
 * A compensation (`undo:`) belongs to the failing workflow, not to its node's run.
 */
export function workflowNodeOf(event: EventEnvelope): string | undefined {
  const payload = event.payload as { nodeId?: unknown; key?: unknown } | null
  if (payload === null || typeof payload !== 'object') return undefined
  if (event.type.startsWith('workflow.node.') && typeof payload.nodeId === 'string') {
    return payload.nodeId
  }
  if (typeof payload.key !== 'string') return undefined
  return (NODE_KEY.exec(payload.key) ?? ITEM_KEY.exec(payload.key))?.[1]
}
