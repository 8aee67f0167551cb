import {
  commands,
  type Definition,
  DefinitionError,
  defineKind,
  defineModule,
  type FlowControl,
  type Module,
  type SignalSchemas,
  type StandardSchema,
} from '../../core/module-api.js'
import { type Declarations, declarationsOf } from '../shared/declarations.js'
import type { ApprovalDecision } from './accept-decision.js'
import { type ApprovalAction, approvalEvents } from './approval-events.js'
import { gateStep } from './gate.js'
import { pendingApprovals } from './pending-approvals.js'

/** `Sg`: the signals its runs accept (docs/workflows.md, "Signals"); `N` its name. */
export interface ApprovalDefinition<
  I = any,
  Sg extends SignalSchemas = SignalSchemas,
  N extends string = string,
> extends Definition<I, ApprovalDecision> {
  readonly kind: 'approval'
  readonly name: N
  readonly signals?: Sg
  readonly title: (input: I) => string
  readonly description?: (input: I) => string
  readonly actions?: ApprovalAction[]
  readonly timeoutMs?: number
}

/**
 * A startable approval: the run asks a human and completes with the decision.
 *
 * @example
 * const refund = defineApproval({ name: 'refund', title: (i: { amount: number }) => `Refund ${i.amount}?` })
 */
export function defineApproval<
  I = any,
  Sg extends SignalSchemas = {},
  const N extends string = string,
>(
  config: {
    name: N
    version?: string
    /** This version is the one a start by name without a version gets (docs/engine.md). */
    default?: boolean
    /** Flow control of its runs: concurrency per key (docs/flow-control.md). */
    flow?: FlowControl
    input?: StandardSchema<any, I>
    title: (input: I) => string
    description?: (input: I) => string
    actions?: ApprovalAction[]
    timeoutMs?: number
  } & Declarations<Sg>,
): ApprovalDefinition<I, Sg, N> {
  if (typeof config?.name !== 'string' || config.name.length === 0) {
    throw new DefinitionError('defineApproval: name is required')
  }
  const where = `approval ${config.name}`
  if (typeof config.title !== 'function') {
    throw new DefinitionError(`${where}: title must be a function of the input`)
  }
  const { signals: _signals, effects: _effects, ...rest } = config
  return Object.freeze({
    ...rest,
    ...declarationsOf(where, config),
    kind: 'approval' as const,
    version: config.version ?? 'v1',
  })
}

const approvalKind = defineKind<null, ApprovalDefinition>({
  initialState: () => null,
  decide(_state, ctx) {
    const def = ctx.definition
    const step = gateStep(
      {
        title: def.title(ctx.input as any),
        ...(def.description ? { description: def.description(ctx.input as any) } : {}),
        ...(def.actions ? { actions: def.actions } : {}),
        ...(def.timeoutMs !== undefined ? { timeoutMs: def.timeoutMs } : {}),
        approvalId: ctx.threadId,
      },
      ctx.threadId,
      'approval',
      ctx.outcome,
    )
    if (step.result === undefined) return step.commands
    return [...step.commands, commands.complete(step.result)]
  },
})

/** The approval module: kind `approval`, its events, and the `pendingApprovals` projection. */
export function approval(options: { definitions?: readonly ApprovalDefinition[] } = {}): Module {
  return defineModule({
    namespace: 'approval',
    version: '1.0.0',
    events: approvalEvents,
    kinds: { approval: approvalKind },
    projections: { pendingApprovals },
    definitions: options.definitions ?? [],
  })
}
