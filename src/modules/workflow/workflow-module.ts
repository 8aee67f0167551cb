import { defineModule, type Module, payload } from '../../core/module-api.js'
import type { WorkflowDefinition } from './define-workflow.js'
import { workflowKind } from './workflow-kind.js'
import { workflowNodes } from './workflow-nodes.js'

/**
 * The workflow module: kind `workflow` and its events.
 *
 * @example
 * createEngine({ modules: [workflow({ definitions: [release] }), approval()] })
 */
export function workflow(options: { definitions?: readonly WorkflowDefinition[] } = {}): Module {
  return defineModule({
    namespace: 'workflow',
    version: '1.0.0',
    events: {
      'node.started': payload<{ nodeId: string; directive?: unknown }>(),
      'node.finished': payload<{ nodeId: string; result: unknown }>(),
      'node.skipped': payload<{ nodeId: string; reason: string }>(),
      'node.failed': payload<{ nodeId: string; error: unknown; fallback?: string }>(),
      'compensation.started': payload<{ error: unknown }>(),
      'node.compensated': payload<{ nodeId: string; result: unknown }>(),
      'compensation.failed': payload<{ nodeId: string; error: unknown }>(),
    },
    kinds: { workflow: workflowKind },
    projections: { workflowNodes },
    definitions: options.definitions ?? [],
  })
}
