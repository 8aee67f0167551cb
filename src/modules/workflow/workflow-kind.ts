import {
  type Command,
  commands,
  defineKind,
  type EffectContext,
  type EffectDefinition,
  type ErrorInfo,
  type Json,
  type Outcome,
  toErrorInfo,
} from '../../core/module-api.js'
import { COMPENSABLE } from './compensation.js'
import { compensateOnFailure, compensationStep } from './compensation-steps.js'
import type { NodeSpec, WorkflowDefinition } from './define-workflow.js'
import { directiveStep } from './directive-steps.js'
import { type Directive, directiveBuilders, isDirective } from './directives.js'
import { NodeBodyContext } from './node-context.js'
import { workflowNodeOf } from './node-of.js'
import { workflowMigrationDifferences } from './workflow-migration.js'
import {
  type Ctx,
  doKey,
  errorOf,
  failNode,
  finish,
  itemKey,
  type NodeEvent,
  type NodeState,
  runKey,
  type WorkflowState,
  withEntry,
} from './workflow-state.js'

/** A node body's outcome value: its result, the directive it returned, or how it misused one. */
interface BodyResult {
  value?: Json
  directive?: Directive
  /** DIRECTIVE_MISUSE (node-context.ts): fails the node, never retried. */
  misuse?: ErrorInfo
}

/**
 * The workflow kind. A node's body runs as an inline effect (recorded once with the
 * iteration's commit); a directive it returns becomes one durable command whose outcome is the
 * node's result. Node failure follows `onFailure`. All progress is derived from recorded
 * events and command outcomes, so an operator retry that re-opens an effect resumes the node.
 */
export const workflowKind = defineKind<WorkflowState, WorkflowDefinition>({
  initialState: () => ({ nodes: {}, results: {} }),

  step(state, event) {
    if (!event.type.startsWith('workflow.')) return state
    const p = event.payload as unknown as NodeEvent
    switch (event.type) {
      case 'workflow.node.started': {
        const node: NodeState = { status: 'started' }
        if (p.directive) node.directive = p.directive
        return next(state, withEntry(state.nodes, p.nodeId, node))
      }
      case 'workflow.node.finished':
        return next(
          state,
          withEntry<NodeState>(state.nodes, p.nodeId, { status: 'finished' }),
          // Frozen: node bodies receive it as ctx.results without a copy.
          Object.freeze(withEntry(state.results, p.nodeId, p.result ?? null)),
        )
      case 'workflow.node.skipped':
        return next(state, withEntry<NodeState>(state.nodes, p.nodeId, { status: 'skipped' }))
      case 'workflow.node.failed': {
        const node: NodeState = { status: 'failed', failedAt: event.seq }
        if (p.fallback) node.fallback = p.fallback
        const directive = state.nodes[p.nodeId]?.directive
        if (directive) node.directive = directive
        return next(state, withEntry(state.nodes, p.nodeId, node))
      }
      case 'workflow.compensation.started': {
        const error = (event.payload as { error: ErrorInfo }).error
        return Object.assign({}, state, { compensating: { error, done: {} } })
      }
      case 'workflow.node.compensated': {
        const c = state.compensating
        if (!c) return state
        const compensating = { error: c.error, done: withEntry(c.done, p.nodeId, true as const) }
        return Object.assign({}, state, { compensating })
      }
      default:
        return state
    }
  },

  decide(recorded, ctx) {
    const def = ctx.definition
    if (recorded.compensating) return compensationStep(def, recorded, ctx)
    return compensateOnFailure(def, recorded, decideNodes(def, recorded, ctx))
  },

  nodeOf: workflowNodeOf,
  migrationDifferences: workflowMigrationDifferences,
})

/** A state with new nodes (and results), keeping the rest. */
function next(
  state: WorkflowState,
  nodes: Record<string, NodeState>,
  results = state.results,
): WorkflowState {
  return state.compensating
    ? { nodes, results, compensating: state.compensating }
    : { nodes, results }
}

/**
 * One decide's walk over the nodes: the commands so far, the results the later nodes see, and
 * (with lookahead) the nodes this decide finishes or skips. A class with methods, not closures:
 * a decide runs once per decide round of every run (decisions.md, "A decide allocates only what
 * it returns").
 */
class NodesWalk {
  readonly out: Command[] = []
  /** Without fallbacks, a node this decide finishes or skips counts as done for the nodes
   * after it (def.order is topological), so the next node starts in the same round. */
  readonly lookahead: boolean
  doneNow: Set<string> | undefined
  running = 0
  /** Read through `shared()` when handed out; `push` adds to it. */
  results: Record<string, Json>
  /**
   * `results` is this walk's own copy, not yet handed out (so not frozen): the nodes a decide
   * finishes add to it in place, one copy per walk instead of one per node (a fan-out's
   * branches all finish in one decide).
   */
  owned = false

  constructor(
    readonly def: WorkflowDefinition,
    readonly state: WorkflowState,
    readonly ctx: Ctx,
    /** Each node's state, by its position in `def.order` (read once per decide). */
    readonly states: ReadonlyArray<NodeState | undefined>,
  ) {
    this.lookahead = def.fallbacks.size === 0
    this.results = this.lookahead ? state.results : resultsOf(state, def)
  }

  isDone(id: string): boolean {
    if (this.doneNow?.has(id)) return true
    return this.ended(this.state.nodes[id])
  }

  /** `isDone` for the node at position `at` of `def.order`. */
  isDoneAt(at: number): boolean {
    if (this.doneNow?.has(this.def.order[at])) return true
    return this.ended(this.states[at])
  }

  private ended(node: NodeState | undefined): boolean {
    if (!node) return false
    if (node.status === 'finished' || node.status === 'skipped') return true
    return node.status === 'failed' && node.fallback !== undefined && this.isDone(node.fallback)
  }

  allDoneAt(positions: readonly number[] | undefined): boolean {
    if (positions) {
      for (let i = 0; i < positions.length; i++) if (!this.isDoneAt(positions[i])) return false
    }
    return true
  }

  add(step: readonly Command[]): void {
    const out = this.out
    for (let i = 0; i < step.length; i++) out.push(step[i])
  }

  /** Pushes a node's commands; with lookahead, notes the node finished or skipped by them. */
  push(id: string, spec: NodeSpec, step: readonly Command[]): void {
    this.add(step)
    const out = this.out
    const setAttributes = spec.attributes
    if (!this.lookahead && !setAttributes) return
    const ended = endOf(step, id)
    if (!ended) return
    if (setAttributes && 'result' in ended) {
      out.push(attributesOf(id, setAttributes, this.ctx.input, ended.result, this.shared()))
    }
    if (!this.lookahead) return
    this.markDone(id)
    this.running--
    if (!('result' in ended)) return
    if (!this.owned) {
      this.results = Object.assign({}, this.results)
      this.owned = true
    }
    this.results[id] = ended.result
  }

  /**
   * The results as a node body, `when`, a hook or the completion sees them: frozen, and never
   * changed after (a later finish copies again).
   */
  shared(): Record<string, Json> {
    if (this.owned) {
      Object.freeze(this.results)
      this.owned = false
    }
    return this.results
  }

  markDone(id: string): void {
    ;(this.doneNow ??= new Set()).add(id)
  }
}

/**
 * A definition's nodes by position in `order`: each one's spec and the positions of the nodes
 * it runs after. Made once per definition: a decide then reads a node's state once, by
 * position, instead of looking ids up in the state's and the definition's node records for
 * every node and dependency (keyed loads V8 cannot specialize: every state's `nodes` has a
 * shape of its own).
 */
interface NodePlan {
  specs: readonly NodeSpec[]
  after: ReadonlyArray<readonly number[] | undefined>
}
const plans = new WeakMap<WorkflowDefinition, NodePlan>()
function planOf(def: WorkflowDefinition): NodePlan {
  let plan = plans.get(def)
  if (!plan) {
    const position = new Map(def.order.map((id, i) => [id, i]))
    const specs = def.order.map((id) => def.nodes[id])
    // defineWorkflow refuses an `after` naming an unknown node.
    const after = specs.map((spec) => spec.after?.map((dep) => position.get(dep) as number))
    plan = { specs, after }
    plans.set(def, plan)
  }
  return plan
}

/** The nodes' commands: those of the nodes running, and of the nodes whose turn has come. */
function decideNodes(def: WorkflowDefinition, recorded: WorkflowState, ctx: Ctx): Command[] {
  const state = liveNodes(recorded, ctx)
  const order = def.order
  const plan = planOf(def)
  // Every node a run recorded is in its definition's order (a migration keeps every node the
  // run reached; a definition changed in place is refused before it decides).
  const states: Array<NodeState | undefined> = new Array(order.length)
  let running = 0
  for (let i = 0; i < order.length; i++) {
    const node = state.nodes[order[i]]
    states[i] = node
    if (node?.status === 'started') running++
  }
  const walk = new NodesWalk(def, state, ctx, states)
  walk.running = running
  let triggered: Set<string> | undefined
  if (def.fallbacks.size > 0) {
    triggered = new Set()
    for (const node of Object.values(state.nodes)) if (node.fallback) triggered.add(node.fallback)
  }
  let progressing = walk.running > 0
  for (let i = 0; i < order.length; i++) {
    const id = order[i]
    const node = states[i]
    const spec = plan.specs[i]
    if (node?.status === 'started') {
      walk.push(id, spec, nodeStep(def, id, node, walk, ctx))
      continue
    }
    if (node) continue
    if (def.fallbacks.has(id) && !triggered?.has(id)) continue
    if (!walk.allDoneAt(plan.after[i])) continue
    progressing = true
    let wanted: boolean
    try {
      wanted = spec.when ? spec.when({ input: ctx.input, results: walk.shared() }) !== false : true
    } catch (error) {
      walk.add(failNode(def, id, toErrorInfo(error)))
      continue
    }
    if (!wanted) {
      walk.out.push(commands.emit('workflow.node.skipped', { nodeId: id, reason: 'when' }))
      if (walk.lookahead) walk.markDone(id)
      continue
    }
    if (walk.running >= def.concurrency) continue
    walk.running++
    walk.push(id, spec, startNode(def, id, walk.shared(), ctx))
  }
  if (walk.out.length > 0 || progressing) return walk.out
  return [complete(def, ctx, walk.shared())]
}

/**
 * The nodes as they stand now: a failed node whose command an operator retry re-opened after
 * the node failed (`Outcome.reopenedAt`) is started again, going on from its directive (or its
 * body). It stays so until the node records its next end.
 */
function liveNodes(state: WorkflowState, ctx: Ctx): WorkflowState {
  let nodes: Record<string, NodeState> | undefined
  for (const id in state.nodes) {
    const node = state.nodes[id]
    if (node.status !== 'failed') continue
    const reopenedAt = reopenedSince(id, node, ctx)
    if (reopenedAt === undefined || reopenedAt <= (node.failedAt ?? 0)) continue
    const live: NodeState = { status: 'started' }
    if (node.directive) live.directive = node.directive
    nodes ??= Object.assign({}, state.nodes)
    nodes[id] = live
  }
  return nodes ? { nodes, results: state.results } : state
}

/** When an operator retry last re-opened the node's command (a fan-out's: any item's). */
function reopenedSince(id: string, node: NodeState, ctx: Ctx): number | undefined {
  const directive = node.directive
  if (directive?.$directive !== 'map') {
    return ctx.outcome(directive ? doKey(id) : runKey(id)).reopenedAt
  }
  let last: number | undefined
  for (let i = 0; i < directive.items.length; i++) {
    const at = ctx.outcome(itemKey(id, i)).reopenedAt
    if (at !== undefined && (last === undefined || at > last)) last = at
  }
  return last
}

/** A node's `attributes` hook as the command that sets them (a throw fails the run). */
function attributesOf(
  id: string,
  hook: NonNullable<NodeSpec['attributes']>,
  input: unknown,
  result: Json,
  results: Record<string, any>,
): Command {
  try {
    return commands.attributes(hook({ input, result, results }))
  } catch (error) {
    const { message } = toErrorInfo(error)
    return commands.fail({
      code: 'INVALID_ATTRIBUTES',
      message: `node ${id}: attributes: ${message}`,
    })
  }
}

/** Whether `step` finishes (with its result) or skips node `id`. */
function endOf(
  step: readonly Command[],
  id: string,
): { result: Json } | { skipped: true } | undefined {
  for (const command of step) {
    if (command.type !== 'emit' || (command.payload as { nodeId?: string })?.nodeId !== id) continue
    if (command.event === 'workflow.node.finished') {
      return { result: (command.payload as { result: Json }).result }
    }
    if (command.event === 'workflow.node.skipped') return { skipped: true }
  }
  return undefined
}

function resultsOf(state: WorkflowState, def: WorkflowDefinition): Record<string, Json> {
  // Object.assign, not a spread: keys are added below (copy.ts: a spread that then gains keys
  // takes V8's slow path).
  const results: Record<string, Json> = Object.assign({}, state.results)
  for (const id of def.order) {
    const fallback = state.nodes[id]?.fallback
    if (fallback && fallback in state.results) results[id] = state.results[fallback]
  }
  return results
}

function complete(def: WorkflowDefinition, ctx: Ctx, results: Record<string, Json>): Command {
  if (!def.output) return commands.complete(results)
  try {
    return commands.complete(def.output({ input: ctx.input, results }) ?? null)
  } catch (error) {
    return commands.fail({ code: 'OUTPUT_FAILED', message: toErrorInfo(error).message })
  }
}

/**
 * The inline effect that runs a node's body once per attempt. The first attempt is ephemeral:
 * when it succeeds, the node's start records what it returned (`startNode`), so a step costs no
 * effect events of its own; a failed body is recorded as an effect and retried as one.
 */
function nodeBody(
  def: WorkflowDefinition,
  id: string,
  results: Record<string, Json>,
  ctx: Ctx,
  ephemeral: boolean,
): Command {
  const spec = def.nodes[id]
  const effect: EffectDefinition = {
    kindOf: 'effect',
    type: 'workflow.node',
    execution: 'inline',
    ephemeral,
    timeoutMs: spec.timeoutMs,
    execute(_input: unknown, ectx: EffectContext) {
      const body = new NodeBodyContext(def, ctx, results, id, ectx, buildersFor(ectx.effectType))
      // A fan-out's bad input fails the node as a misuse does: recorded, never retried.
      const refused = (error: unknown): BodyResult => {
        if (body.fanOutError) return { misuse: body.fanOutError }
        throw error
      }
      // Synchronous bodies stay synchronous: the runtime then records them without a promise.
      let value: unknown
      try {
        value = spec.run(body)
      } catch (error) {
        return refused(error)
      }
      return value instanceof Promise
        ? value.then((v) => recordable(body, v), refused)
        : recordable(body, value)
    },
  }
  const retry = spec.retry ?? { maxAttempts: 1 }
  return commands.invoke(effect, { nodeId: id }, { key: runKey(id), retry })
}

/** What a node body's run records: its value, its directive, or how it misused directives. */
function recordable(body: NodeBodyContext, value: unknown): BodyResult {
  const misuse = body.misuse(value)
  if (misuse) return { misuse }
  return isDirective(value) ? { directive: value } : { value: (value ?? null) as Json }
}

type Builders = ReturnType<typeof directiveBuilders>
/** The builders of the last engine's `effectType` (one per engine; rebuilt if it changes). */
let lastBuilders: { effectType: EffectContext['effectType']; builders: Builders } | undefined
function buildersFor(effectType: EffectContext['effectType']): Builders {
  if (lastBuilders?.effectType !== effectType) {
    lastBuilders = { effectType, builders: directiveBuilders(effectType) }
  }
  return lastBuilders.builders
}

/**
 * A node whose turn has come: runs its body (ephemeral), then records `workflow.node.started`
 * with the directive the body returned, and goes on from the body's outcome in the same round.
 */
function startNode(
  def: WorkflowDefinition,
  id: string,
  results: Record<string, Json>,
  ctx: Ctx,
): Command[] {
  const body = ctx.outcome(runKey(id))
  if (body.status === 'none') return [nodeBody(def, id, results, ctx, true)]
  const directive = body.status === 'completed' ? (body.value as BodyResult).directive : undefined
  const started: Record<string, Json> = { nodeId: id }
  if (directive) started.directive = directive as unknown as Json
  const rest = bodyStep(def, id, results, ctx, body)
  // A loop, not a spread (a node starts once per step of every run); `rest` may be shared.
  const step: Command[] = [commands.emit('workflow.node.started', started)]
  for (let i = 0; i < rest.length; i++) step.push(rest[i])
  return step
}

/** A started node: on from its recorded directive, or (older logs, retried bodies) its body. */
function nodeStep(
  def: WorkflowDefinition,
  id: string,
  node: NodeState,
  walk: NodesWalk,
  ctx: Ctx,
): Command[] {
  if (node.directive) return directiveStep(def, id, node.directive, ctx)
  return bodyStep(def, id, walk.shared(), ctx, ctx.outcome(runKey(id)))
}

function bodyStep(
  def: WorkflowDefinition,
  id: string,
  results: Record<string, Json>,
  ctx: Ctx,
  body: Outcome,
): Command[] {
  if (body.status === 'none' || body.status === 'pending') {
    return [nodeBody(def, id, results, ctx, false)]
  }
  if (body.status !== 'completed') return failNode(def, id, errorOf(body, 'node body'))
  const recorded = body.value as BodyResult
  if (recorded.misuse) return failNode(def, id, recorded.misuse)
  if (def.nodes[id].compensate && !COMPENSABLE.has(recorded.directive?.$directive ?? '')) {
    return failNode(def, id, {
      code: 'INVALID_COMPENSATION',
      message: `workflow ${def.name}@${def.version}, node ${id}: compensate undoes an effect, but the node returned ${recorded.directive ? `ctx.${recorded.directive.$directive}(…)` : 'a value'}; give compensate to a node that returns ctx.invoke, ctx.spawn or ctx.map`,
    })
  }
  if (!recorded.directive) return finish(id, recorded.value ?? null)
  return directiveStep(def, id, recorded.directive, ctx)
}
