import { DefinitionError } from '../../core/module-api.js'
import { defineWorkflow, type NodeSpec } from './define-workflow.js'
import type { DefineOrderedWorkflow } from './ordered-signature.js'

/**
 * Declares a DAG workflow from a list of nodes, each with its `id`, listed after the nodes it
 * runs after (and after its fallback). The same workflow as `defineWorkflow` with the nodes by
 * id (the same definition, shape and version rules), but typed further: inside a node every
 * upstream result is inferred, whatever the upstream `run`s take (docs/workflows.md, "Types").
 * Up to 32 nodes are typed; the record form of `defineWorkflow` has no limit.
 *
 * @example
 * const release = defineOrderedWorkflow({
 *   name: 'release',
 *   nodes: [
 *     { id: 'draft', run: ({ input }) => ({ text: `About ${input.topic}` }) },
 *     { id: 'publish', after: ['draft'], run: ({ results }) => results.draft.text },
 *   ],
 * })
 */
export const defineOrderedWorkflow = orderedWorkflow as unknown as DefineOrderedWorkflow

function orderedWorkflow(config: {
  name: string
  nodes: ReadonlyArray<NodeSpec & { id: string }>
}): ReturnType<typeof defineWorkflow> {
  const name = config?.name
  if (typeof name !== 'string' || name.length === 0) {
    throw new DefinitionError('defineOrderedWorkflow: name is required')
  }
  const where = `workflow ${name}`
  const list = config.nodes
  if (!Array.isArray(list)) {
    throw new DefinitionError(`${where}: nodes must be a list of nodes with ids`)
  }
  const ids = new Set(list.map((node) => node?.id))
  const nodes: Record<string, NodeSpec> = {}
  for (const node of list) {
    const id = node?.id
    if (typeof id !== 'string' || id.length === 0) {
      throw new DefinitionError(`${where}: every node needs an id`)
    }
    if (id in nodes) throw new DefinitionError(`${where}: node id "${id}" is listed twice`)
    const fallback = (node.onFailure as { fallback?: unknown } | undefined)?.fallback
    for (const dep of [
      ...(node.after ?? []),
      ...(typeof fallback === 'string' ? [fallback] : []),
    ]) {
      // An unknown id is left to defineWorkflow, which names it.
      if (ids.has(dep) && !(dep in nodes)) {
        throw new DefinitionError(
          `${where}: node ${id} names "${dep}", which is listed after it; list each node after the nodes it runs after and after its fallback`,
        )
      }
    }
    const { id: _id, ...spec } = node
    nodes[id] = spec
  }
  return defineWorkflow({ ...config, nodes } as Parameters<typeof defineWorkflow>[0])
}
