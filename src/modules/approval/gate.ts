import { type Command, commands, type Json, type Outcome } from '../../core/module-api.js'
import type { GateExpectation } from './accept-decision.js'
import { type ApprovalAction, DEFAULT_ACTIONS } from './approval-events.js'

/** An inline human gate, for workflows (`ctx.gate`) and custom kinds. */
export interface GateSpec {
  title: string
  description?: string
  approvalId?: string
  actions?: ApprovalAction[]
  timeoutMs?: number
}

/** A gate as a JSON value (what `gate()` returns and a workflow node records). */
export interface GateDirective extends GateSpec {
  $directive: 'gate'
}

export function gate(spec: GateSpec): GateDirective {
  if (typeof spec?.title !== 'string' || spec.title.length === 0) {
    throw new TypeError('gate: title is required')
  }
  return Object.assign({}, spec, { $directive: 'gate' as const })
}

export const approvalIdFor = (spec: GateSpec, threadId: string, key: string): string =>
  spec.approvalId ?? `${threadId}:${key}`

/**
 * The commands of a gate under command key `key` of thread `threadId`: request the approval
 * once, wait for its decision (with the timeout), and on timeout record `approval.timed_out`.
 * `result` is set once the gate is resolved: the decision, or `{ outcome: 'timed_out' }`.
 */
export function gateStep(
  spec: GateSpec,
  threadId: string,
  key: string,
  outcome: (key: string) => Outcome,
): { commands: Command[]; result?: Json } {
  const approvalId = approvalIdFor(spec, threadId, key)
  const actions = spec.actions ?? DEFAULT_ACTIONS
  const requested: Record<string, Json> = {
    approvalId,
    threadId,
    title: spec.title,
    actions: actions as unknown as Json,
  }
  if (spec.description !== undefined) requested.description = spec.description
  const waitKey = `${key}:decision`
  const decided = outcome(waitKey)
  if (decided.status === 'completed') return { commands: [], result: decided.value }
  if (decided.status === 'timed_out') {
    return {
      commands: [commands.emit('approval.timed_out', { approvalId }, { key: `${key}:timed-out` })],
      result: { approvalId, outcome: 'timed_out' },
    }
  }
  return {
    commands: [
      commands.emit('approval.requested', requested, { key: `${key}:request` }),
      commands.wait(
        {
          event: { type: 'approval.decided', match: { approvalId }, expect: expectation(actions) },
          ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
        },
        { key: waitKey },
      ),
    ],
  }
}

/** What the gate's wait records for `approval.decided`'s check: its action ids' outcomes. */
function expectation(actions: ApprovalAction[]): Json {
  if (actions === DEFAULT_ACTIONS) return DEFAULT_EXPECTATION
  const byId: Record<string, string> = {}
  for (const action of actions) byId[action.id] = action.outcome
  return { actions: byId } satisfies GateExpectation
}

/** Shared by every default gate: recorded as is, so it must never be mutated. */
const DEFAULT_EXPECTATION: Json = Object.freeze({
  actions: Object.freeze({ approve: 'approve', reject: 'reject' }),
}) as Json
