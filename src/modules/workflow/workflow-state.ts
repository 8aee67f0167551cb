import {
  type Command,
  commands,
  type DecideContext,
  type ErrorInfo,
  type Json,
  type Outcome,
} from '../../core/module-api.js'
import type { CompensationState } from './compensation.js'
import type { WorkflowDefinition } from './define-workflow.js'
import type { Directive } from './directives.js'

// The workflow kind's state as its events fold it, the keys of the commands its nodes issue,
// and how a node ends (finishes, or fails by its `onFailure`): shared by the kind's steps
// (workflow-kind.ts), its directives' steps and its compensation.

export interface NodeState {
  status: 'started' | 'finished' | 'skipped' | 'failed'
  fallback?: string
  /** What the node's body returned, when it returned a directive (recorded in node.started). */
  directive?: Directive
  /** Failed nodes: the seq of the `workflow.node.failed` that recorded it (see `liveNodes`). */
  failedAt?: number
}

/** The payloads of the workflow's own events, as `step` reads them. */
export interface NodeEvent {
  nodeId: string
  directive?: Directive
  result?: Json
  fallback?: string
}

export interface WorkflowState {
  nodes: Record<string, NodeState>
  results: Record<string, Json>
  /** Set once the workflow failed and began undoing its compensable nodes. */
  compensating?: CompensationState
}

export type Ctx = DecideContext<WorkflowDefinition>

/**
 * A copy of `record` with `id` set (states are immutable). Object.assign, not a spread that
 * adds a key: that is V8's slow path (src/core/copy.ts).
 */
export function withEntry<V>(record: Readonly<Record<string, V>>, id: string, value: V) {
  const copy: Record<string, V> = Object.assign({}, record)
  copy[id] = value
  return copy
}

export const runKey = (id: string) => `run:${id}`
export const sendKey = (id: string) => `send:${id}`
export const doKey = (id: string) => `do:${id}`
export const undoKey = (id: string) => `undo:${id}`
export const itemKey = (id: string, index: number) => `item:${id}:${index}`

/** A node's end: `workflow.node.finished` with its result. */
export const finish = (id: string, result: Json): Command[] => [
  commands.emit('workflow.node.finished', { nodeId: id, result }),
]

export function errorOf(outcome: Outcome, what: string): ErrorInfo {
  if (outcome.status === 'failed') return outcome.error
  if (outcome.status === 'timed_out') return { code: 'WAIT_TIMEOUT', message: `${what} timed out` }
  return { code: 'CANCELLED', message: `${what} was cancelled` }
}

export function failNode(def: WorkflowDefinition, id: string, error: ErrorInfo): Command[] {
  const onFailure = def.nodes[id].onFailure ?? 'fail'
  if (onFailure === 'skip') {
    return [commands.emit('workflow.node.skipped', { nodeId: id, reason: 'failed', error })]
  }
  if (typeof onFailure === 'object') {
    return [
      commands.emit('workflow.node.failed', { nodeId: id, error, fallback: onFailure.fallback }),
    ]
  }
  return [
    commands.emit('workflow.node.failed', { nodeId: id, error }),
    commands.fail({
      code: 'NODE_FAILED',
      message: `node ${id} failed: ${error.message}`,
      details: { nodeId: id, error },
    }),
  ]
}
