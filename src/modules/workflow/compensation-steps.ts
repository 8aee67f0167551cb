import {
  type Command,
  commands,
  type ErrorInfo,
  type Json,
  toErrorInfo,
} from '../../core/module-api.js'
import {
  type Compensation,
  type CompensationState,
  compensationBuilder,
  isCompensation,
} from './compensation.js'
import type { WorkflowDefinition } from './define-workflow.js'
import {
  type Ctx,
  doKey,
  errorOf,
  itemKey,
  type NodeState,
  runKey,
  sendKey,
  undoKey,
  type WorkflowState,
} from './workflow-state.js'

// How a failing workflow undoes its finished nodes (docs/workflows.md, "Compensation").

/**
 * A workflow that fails with finished compensable nodes compensates first: the failure becomes
 * `workflow.compensation.started`, and the run fails once every compensation has run.
 */
export function compensateOnFailure(
  def: WorkflowDefinition,
  state: WorkflowState,
  out: Command[],
): Command[] {
  if (def.compensable.length === 0) return out
  const failing = out.findIndex((c) => c.type === 'fail')
  if (failing < 0) return out
  const finishing = new Set<string>()
  for (const c of out) {
    if (c.type === 'emit' && c.event === 'workflow.node.finished') {
      finishing.add((c.payload as { nodeId: string }).nodeId)
    }
  }
  const any = def.compensable.some(
    (id) => state.nodes[id]?.status === 'finished' || finishing.has(id),
  )
  if (!any) return out
  const error = (out[failing] as Extract<Command, { type: 'fail' }>).error
  const kept = out.filter((_, i) => i !== failing)
  kept.push(commands.emit('workflow.compensation.started', { error: error as unknown as Json }))
  return kept
}

/**
 * Compensating: the nodes still running are cancelled, then each finished compensable node's
 * compensation runs, one at a time in reverse dependency order; the run fails with the
 * original error once all ran, or with COMPENSATION_FAILED when one fails for good (an
 * operator retry of its effect goes on from there).
 */
export function compensationStep(
  def: WorkflowDefinition,
  state: WorkflowState,
  ctx: Ctx,
): Command[] {
  const c = state.compensating as CompensationState
  const out: Command[] = []
  for (const id in state.nodes) {
    const node = state.nodes[id]
    if (node.status === 'started') out.push(...cancelNode(id, node, ctx))
  }
  const compensated: string[] = Object.keys(c.done)
  for (const id of def.compensable) {
    if (c.done[id] || state.nodes[id]?.status !== 'finished') continue
    const key = undoKey(id)
    const outcome = ctx.outcome(key)
    if (outcome.status === 'completed') {
      out.push(commands.emit('workflow.node.compensated', { nodeId: id, result: outcome.value }))
      compensated.push(id)
      continue
    }
    if (outcome.status === 'pending') return out
    if (outcome.status === 'none') {
      const spec = def.nodes[id]
      let undo: Compensation
      try {
        undo = (spec.compensate as NonNullable<typeof spec.compensate>)({
          input: ctx.input,
          result: state.results[id],
          results: state.results,
          nodeId: id,
          runId: ctx.runId,
          invoke: compensationBuilder,
        })
        if (!isCompensation(undo)) {
          throw new TypeError('compensate must return ctx.invoke(effect, input)')
        }
      } catch (error) {
        return [...out, ...compensationFailed(id, toErrorInfo(error), c)]
      }
      const retry = spec.compensateRetry
      out.push(commands.invoke(undo.effect, undo.input, retry ? { key, retry } : { key }))
      return out
    }
    return [...out, ...compensationFailed(id, errorOf(outcome, `compensation of node ${id}`), c)]
  }
  const details = Object.assign({}, c.error.details as Record<string, Json> | undefined, {
    compensated,
  })
  out.push(commands.fail(Object.assign({}, c.error, { details })))
  return out
}

function compensationFailed(id: string, error: ErrorInfo, c: CompensationState): Command[] {
  return [
    commands.emit('workflow.compensation.failed', { nodeId: id, error: error as unknown as Json }),
    commands.fail({
      code: 'COMPENSATION_FAILED',
      message: `compensating node ${id} failed: ${error.message}. Retry its compensation effect (retryEffect) to go on compensating`,
      details: { nodeId: id, error, failure: c.error } as unknown as Json,
    }),
  ]
}

/** Cancels what a running node has issued (no-ops for keys it has nothing pending under). */
function cancelNode(id: string, node: NodeState, ctx: Ctx): Command[] {
  const out: Command[] = []
  const reason = 'the workflow is compensating'
  for (const key of [runKey(id), doKey(id), sendKey(id)]) {
    if (ctx.outcome(key).status === 'pending') out.push(commands.cancel(key, reason))
  }
  if (node.directive?.$directive === 'map') {
    for (let i = 0; i < node.directive.items.length; i++) {
      if (ctx.outcome(itemKey(id, i)).status === 'pending') {
        out.push(commands.cancel(itemKey(id, i), reason))
      }
    }
  }
  return out
}
