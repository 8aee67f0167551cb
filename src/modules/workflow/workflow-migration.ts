import type { Json, MigrationDifference } from '../../core/module-api.js'
import type { NodeSpec, WorkflowDefinition } from './define-workflow.js'

/** What the check reads of a thread's recorded state (workflow-kind.ts `WorkflowState`). */
interface RecordedNodes {
  nodes: Readonly<Record<string, { status: string; fallback?: string }>>
}

/** A node's upstream edges as compared: sorted ids. */
const upstream = (node: NodeSpec): string[] => [...(node.after ?? [])].sort()

/** A node's failure policy as the shape records it. */
const policy = (node: NodeSpec): Json => {
  const onFailure = node.onFailure ?? 'fail'
  return typeof onFailure === 'string' ? onFailure : { fallback: onFailure.fallback }
}

const same = (a: Json, b: Json) => JSON.stringify(a) === JSON.stringify(b)

/**
 * Whether a workflow thread recorded under `from` can go on under `to` (docs/deploys.md,
 * "Migrating runs"): every node the thread started, finished, skipped or failed exists in `to`
 * with the same upstream edges, and a failed node keeps its failure policy (and its fallback
 * node). Nodes not reached yet may be added, removed or rewired freely.
 */
export function workflowMigrationDifferences(
  state: RecordedNodes,
  from: WorkflowDefinition,
  to: WorkflowDefinition,
): MigrationDifference[] {
  const differences: MigrationDifference[] = []
  for (const [nodeId, node] of Object.entries(state.nodes)) {
    const path = `nodes.${nodeId}`
    const before = from.nodes[nodeId]
    const after = to.nodes[nodeId]
    if (!after) {
      differences.push({
        path,
        current: { status: node.status, after: before ? upstream(before) : null },
        target: null,
        reason: `node ${nodeId} is ${node.status} in the run, and ${to.name}@${to.version} has no such node`,
      })
      continue
    }
    const edges = before ? upstream(before) : []
    if (!same(edges, upstream(after))) {
      differences.push({
        path: `${path}.after`,
        current: edges,
        target: upstream(after),
        reason: `node ${nodeId} is ${node.status} in the run after [${edges.join(', ')}]; in ${to.name}@${to.version} it runs after [${upstream(after).join(', ')}]`,
      })
    }
    if (node.status === 'failed' && before && !same(policy(before), policy(after))) {
      differences.push({
        path: `${path}.onFailure`,
        current: policy(before),
        target: policy(after),
        reason: `node ${nodeId} failed in the run, and ${to.name}@${to.version} handles its failure differently`,
      })
    }
    // A fallback that already ran is reported as a node of its own above.
    const fallback = node.fallback
    if (fallback !== undefined && !to.nodes[fallback] && !(fallback in state.nodes)) {
      differences.push({
        path: `nodes.${node.fallback}`,
        current: { fallbackOf: nodeId },
        target: null,
        reason: `node ${nodeId} fell back to ${node.fallback}, which ${to.name}@${to.version} does not have`,
      })
    }
  }
  return differences
}
