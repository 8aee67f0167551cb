import type { InputContext, Json } from '../../core/module-api.js'

/** The payload of `approval.decided` as recorded, and what a gate resolves with. */
export interface ApprovalDecision {
  approvalId: string
  outcome: string
  actionId?: string
  payload?: Json
  /** A display name the decider gave: free text, recorded as sent. */
  name?: string
  /**
   * Who decided, set by the engine and never by the sender: the identity the HTTP `authorize`
   * hook returned, or embed `signal`'s `identity` option; `null` when the caller was not
   * authenticated (no hook, or a hook that returned `true`).
   */
  by?: Json
}

/** What a gate records with its wait (`expect`): each action's outcome by action id. */
export interface GateExpectation {
  actions: Record<string, string>
}

/**
 * `accept` of `approval.decided`: a decision must answer a pending approval of this run (an
 * open gate wait for its `approvalId`), with one of that gate's outcomes (and, when it names
 * an action, that action's outcome). The recorded decision carries `by`, the caller's
 * identity: never the sender's word.
 */
export function acceptDecision(decision: Omit<ApprovalDecision, 'by'>, ctx: InputContext): Json {
  const { approvalId } = decision
  if (ctx.waiting.length === 0) {
    ctx.refuse(
      `approval "${approvalId}" is not pending in run ${ctx.runId}: there is no such approval, or it was already decided or timed out`,
      { runId: ctx.runId, approvalId },
    )
  }
  for (const waiter of ctx.waiting) checkAction(decision, actionsOf(waiter.expect), ctx)
  const recorded: Record<string, Json> = { approvalId, outcome: decision.outcome }
  if (decision.actionId !== undefined) recorded.actionId = decision.actionId
  if (decision.payload !== undefined) recorded.payload = decision.payload
  if (decision.name !== undefined) recorded.name = decision.name
  recorded.by = ctx.identity ?? null
  return recorded
}

/** The gate's actions; `undefined` for a gate recorded before gates kept them with the wait. */
function actionsOf(expect: Json | undefined): Array<{ id: string; outcome: string }> | undefined {
  const actions = (expect as Partial<GateExpectation> | null | undefined)?.actions
  if (typeof actions !== 'object' || actions === null) return undefined
  return Object.entries(actions).map(([id, outcome]) => ({ id, outcome }))
}

function checkAction(
  decision: Omit<ApprovalDecision, 'by'>,
  actions: Array<{ id: string; outcome: string }> | undefined,
  ctx: InputContext,
): void {
  if (!actions) return
  const { approvalId, actionId, outcome } = decision
  const details = { approvalId, actions: actions.map((a) => ({ id: a.id, outcome: a.outcome })) }
  if (actionId === undefined) {
    if (actions.some((a) => a.outcome === outcome)) return
    const outcomes = [...new Set(actions.map((a) => a.outcome))].join(', ')
    ctx.refuse(
      `outcome "${outcome}" is not one of approval "${approvalId}"'s outcomes (${outcomes})`,
      details,
    )
  }
  const action = actions.find((a) => a.id === actionId)
  if (!action) {
    const ids = actions.map((a) => a.id).join(', ')
    ctx.refuse(
      `approval "${approvalId}" has no action "${actionId}" (its actions: ${ids})`,
      details,
    )
  }
  if (action.outcome !== outcome) {
    ctx.refuse(
      `action "${actionId}" of approval "${approvalId}" has outcome "${action.outcome}", not "${outcome}"`,
      details,
    )
  }
}
