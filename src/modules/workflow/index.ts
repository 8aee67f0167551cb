export type { NodeSpec, WorkflowDefinition } from './define-workflow.js'
export { defineWorkflow } from './define-workflow.js'
export type { Directive, DirectiveStep, NodeContext } from './directives.js'
export type { DefineOrderedWorkflow } from './ordered-signature.js'
export type { OrderedNode } from './ordered-types.js'
export { defineOrderedWorkflow } from './ordered-workflow.js'
export { workflow } from './workflow-module.js'
export type { NodeStatus, NodeView } from './workflow-nodes.js'
export { workflowNodes } from './workflow-nodes.js'
export type { WorkflowState } from './workflow-state.js'
export type {
  FinalResults,
  NodeResult,
  NodesConfig,
  OnFailure,
  ResultsFor,
  UpstreamOf,
  WorkflowOutput,
} from './workflow-types.js'
