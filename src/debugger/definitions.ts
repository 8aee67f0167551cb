import type { Definition } from '../core/definition.js'

export interface GraphNode {
  id: string
  after: string[]
  /** The node has a `when` guard (it may be skipped). */
  conditional: boolean
  /** Node that runs when this one fails (`onFailure: { fallback }`). */
  fallback?: string
}

export interface DefinitionView {
  kind: string
  name: string
  version: string
  /** Workflow definitions: the DAG, in declaration order. */
  nodes?: GraphNode[]
}

interface WorkflowLike {
  order?: unknown
  nodes?: Record<string, { after?: unknown; when?: unknown; onFailure?: unknown }>
}

/**
 * What the UI may know of the registered definitions: names, and each workflow's node graph.
 * Nothing else (no schemas, no functions) leaves the process.
 */
export function describeDefinitions(definitions: readonly Definition[]): DefinitionView[] {
  return definitions.map((d) => {
    const view: DefinitionView = { kind: d.kind, name: d.name, version: d.version }
    const { order, nodes } = d as Definition & WorkflowLike
    if (d.kind === 'workflow' && Array.isArray(order) && nodes && typeof nodes === 'object') {
      view.nodes = order.map((id: string) => {
        const spec = nodes[id] ?? {}
        const node: GraphNode = {
          id,
          after: Array.isArray(spec.after) ? spec.after.filter((a) => typeof a === 'string') : [],
          conditional: typeof spec.when === 'function',
        }
        const fallback = (spec.onFailure as { fallback?: unknown } | undefined)?.fallback
        if (typeof fallback === 'string') node.fallback = fallback
        return node
      })
    }
    return view
  })
}
