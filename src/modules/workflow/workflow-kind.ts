import {
  type Command,
  commands,
  type DecideContext,
  defineKind,
  type EffectContext,
  type EffectDefinition,
  type ErrorInfo,
  type Json,
  type Outcome,
  toErrorInfo,
  waitUrl,
} from '../../core/module-api.js'
import { gateStep } from '../approval/index.js'
import {
  COMPENSABLE,
  type Compensation,
  type CompensationState,
  compensationBuilder,
  isCompensation,
} from './compensation.js'
import type { NodeSpec, WorkflowDefinition } from './define-workflow.js'
import { type Directive, directiveBuilders, isDirective, type MapDirective } from './directives.js'
import { NodeBodyContext } from './node-context.js'
import { workflowMigrationDifferences } from './workflow-migration.js'

interface NodeState {
  status: 'started' | 'finished' | 'skipped' | 'failed'
  fallback?: string
  /** What the node's body returned, when it returned a directive (recorded in node.started). */
  directive?: Directive
  /** Failed nodes: the seq of the `workflow.node.failed` that recorded it (see `liveNodes`). */
  failedAt?: number
}

/** The payloads of the workflow's own events, as `step` reads them. */
interface NodeEvent {
  nodeId: string
  directive?: Directive
  result?: Json
  fallback?: string
}

/** A node body's outcome value: its result, the directive it returned, or how it misused one. */
interface BodyResult {
  value?: Json
  directive?: Directive
  /** DIRECTIVE_MISUSE (node-context.ts): fails the node, never retried. */
  misuse?: ErrorInfo
}

export interface WorkflowState {
  nodes: Record<string, NodeState>
  results: Record<string, Json>
  /** Set once the workflow failed and began undoing its compensable nodes. */
  compensating?: CompensationState
}

type Ctx = DecideContext<WorkflowDefinition>

/**
 * A copy of `record` with `id` set (states are immutable). Object.assign, not a spread that
 * adds a key: that is V8's slow path (src/core/copy.ts).
 */
function withEntry<V>(record: Readonly<Record<string, V>>, id: string, value: V) {
  const copy: Record<string, V> = Object.assign({}, record)
  copy[id] = value
  return copy
}

const runKey = (id: string) => `run:${id}`
const sendKey = (id: string) => `send:${id}`
const doKey = (id: string) => `do:${id}`
const undoKey = (id: string) => `undo:${id}`
const itemKey = (id: string, index: number) => `item:${id}:${index}`

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

/** The nodes' commands: those of the nodes running, and of the nodes whose turn has come. */
function decideNodes(def: WorkflowDefinition, recorded: WorkflowState, ctx: Ctx): Command[] {
  const state = liveNodes(recorded, ctx)
  const out: Command[] = []
  let results = def.fallbacks.size > 0 ? resultsOf(state, def) : state.results
  // Without fallbacks, a node this decide finishes or skips counts as done for the nodes
  // after it (def.order is topological), so the next node starts in the same round.
  const lookahead = def.fallbacks.size === 0
  let doneNow: Set<string> | undefined
  const isDone = (id: string): boolean => {
    if (doneNow?.has(id)) return true
    const node = state.nodes[id]
    if (!node) return false
    if (node.status === 'finished' || node.status === 'skipped') return true
    return node.status === 'failed' && node.fallback !== undefined && isDone(node.fallback)
  }
  let triggered: Set<string> | undefined
  if (def.fallbacks.size > 0) {
    triggered = new Set()
    for (const node of Object.values(state.nodes)) if (node.fallback) triggered.add(node.fallback)
  }
  let running = 0
  for (const id in state.nodes) if (state.nodes[id].status === 'started') running++
  let progressing = running > 0
  /** Pushes a node's commands; with lookahead, notes the node finished or skipped by them. */
  const push = (id: string, step: Command[]) => {
    out.push(...step)
    const setAttributes = def.nodes[id].attributes
    if (!lookahead && !setAttributes) return
    const ended = endOf(step, id)
    if (!ended) return
    if (setAttributes && 'result' in ended) {
      out.push(attributesOf(id, setAttributes, ctx.input, ended.result, results))
    }
    if (!lookahead) return
    ;(doneNow ??= new Set()).add(id)
    running--
    if ('result' in ended) results = Object.freeze(withEntry(results, id, ended.result))
  }
  for (const id of def.order) {
    const node = state.nodes[id]
    if (node?.status === 'started') {
      push(id, nodeStep(def, id, node, results, ctx))
      continue
    }
    if (node) continue
    if (def.fallbacks.has(id) && !triggered?.has(id)) continue
    const spec = def.nodes[id]
    if (!(spec.after ?? []).every(isDone)) continue
    progressing = true
    let wanted: boolean
    try {
      wanted = spec.when ? spec.when({ input: ctx.input, results }) !== false : true
    } catch (error) {
      out.push(...failNode(def, id, toErrorInfo(error)))
      continue
    }
    if (!wanted) {
      out.push(commands.emit('workflow.node.skipped', { nodeId: id, reason: 'when' }))
      if (lookahead) (doneNow ??= new Set()).add(id)
      continue
    }
    if (running >= def.concurrency) continue
    running++
    push(id, startNode(def, id, results, ctx))
  }
  if (out.length > 0 || progressing) return out
  return [complete(def, ctx, results)]
}

/**
 * A workflow that fails with finished compensable nodes compensates first: the failure becomes
 * `workflow.compensation.started`, and the run fails once every compensation has run.
 */
function compensateOnFailure(
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
function compensationStep(def: WorkflowDefinition, state: WorkflowState, ctx: Ctx): Command[] {
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

/** Whether `step` finishes (with its result) or skips node `id`. */
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

function endOf(step: Command[], id: string): { result: Json } | { skipped: true } | undefined {
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
  return [commands.emit('workflow.node.started', started), ...bodyStep(def, id, results, ctx, body)]
}

/** A started node: on from its recorded directive, or (older logs, retried bodies) its body. */
function nodeStep(
  def: WorkflowDefinition,
  id: string,
  node: NodeState,
  results: Record<string, Json>,
  ctx: Ctx,
): Command[] {
  if (node.directive) return directiveStep(def, id, node.directive, ctx)
  return bodyStep(def, id, results, ctx, ctx.outcome(runKey(id)))
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

/** A node whose body returned `directive`: the directive's command, until its outcome. */
function directiveStep(
  def: WorkflowDefinition,
  id: string,
  directive: Directive,
  ctx: Ctx,
): Command[] {
  if (directive.$directive === 'gate') {
    const step = gateStep(directive, ctx.threadId, doKey(id), ctx.outcome)
    return step.result === undefined
      ? step.commands
      : [...step.commands, ...finish(id, step.result)]
  }
  if (directive.$directive === 'waitForUrl') return waitForUrlStep(def, id, directive, ctx)
  if (directive.$directive === 'map') return mapStep(def, id, directive, ctx)
  const outcome = ctx.outcome(doKey(id))
  if (outcome.status === 'completed') return finish(id, outcome.value)
  // Issued and not finished: nothing new (its effect type, a string, needs no executor bound).
  if (outcome.status === 'pending') return []
  if (outcome.status !== 'none') return failNode(def, id, errorOf(outcome, directive.$directive))
  return [directiveCommand(def, id, directive, doKey(id))]
}

/**
 * A fan-out node: its items' commands, lowest index first, up to its concurrency; the node
 * finishes with their results in input order once every item is done, or fails at the first
 * failed item under `'fail'` (cancelling the items still running).
 */
function mapStep(def: WorkflowDefinition, id: string, d: MapDirective, ctx: Ctx): Command[] {
  const n = d.items.length
  const results: Json[] = []
  const out: Command[] = []
  let running = 0
  let done = 0
  let firstFailed: { index: number; error: ErrorInfo } | undefined
  const waiting: number[] = []
  for (let i = 0; i < n; i++) {
    const outcome = ctx.outcome(itemKey(id, i))
    if (outcome.status === 'none') {
      waiting.push(i)
      continue
    }
    if (outcome.status === 'pending') {
      running++
      continue
    }
    done++
    if (outcome.status === 'completed') {
      results[i] =
        d.onItemFailure === 'collect' ? { ok: true, value: outcome.value } : outcome.value
      continue
    }
    const error = errorOf(outcome, `item ${i} (${d.items[i].$directive})`)
    if (d.onItemFailure === 'collect') results[i] = { ok: false, error: error as unknown as Json }
    if (d.onItemFailure === 'fail') firstFailed ??= { index: i, error }
  }
  if (firstFailed) {
    for (let i = 0; i < n; i++) {
      if (ctx.outcome(itemKey(id, i)).status === 'pending') {
        out.push(commands.cancel(itemKey(id, i), `item ${firstFailed.index} of node ${id} failed`))
      }
    }
    const { index, error } = firstFailed
    const failed: ErrorInfo = {
      code: 'ITEM_FAILED',
      message: `item ${index} of ${n} failed: ${error.message}`,
      details: { index, error } as unknown as Json,
    }
    return [...out, ...failNode(def, id, failed)]
  }
  if (done === n) return finish(id, d.onItemFailure === 'skip' ? compact(results, n) : results)
  for (const i of waiting) {
    if (running >= d.concurrency) break
    out.push(directiveCommand(def, id, d.items[i], itemKey(id, i)))
    running++
  }
  return out
}

/** The results of the items that completed, in input order (`'skip'`). */
function compact(results: Json[], n: number): Json[] {
  const out: Json[] = []
  for (let i = 0; i < n; i++) if (i in results) out.push(results[i])
  return out
}

/**
 * A node waiting on a wait URL: the url wait first (so it is open before the URL exists), then
 * the effect that sends the URL, with a `waitUrl` placeholder the runtime fills for its handler.
 */
function waitForUrlStep(
  def: WorkflowDefinition,
  id: string,
  d: Extract<Directive, { $directive: 'waitForUrl' }>,
  ctx: Ctx,
): Command[] {
  const key = doKey(id)
  const waited = ctx.outcome(key)
  if (waited.status === 'completed') return finish(id, waited.value)
  if (waited.status !== 'none' && waited.status !== 'pending') {
    return failNode(def, id, errorOf(waited, 'the wait URL'))
  }
  const sent = ctx.outcome(sendKey(id))
  if (sent.status === 'failed' || sent.status === 'timed_out' || sent.status === 'cancelled') {
    return failNode(def, id, errorOf(sent, `sending the wait URL (${d.effect})`))
  }
  const out: Command[] = []
  if (waited.status === 'none') {
    const url = d.event === undefined ? {} : { input: d.event }
    const on = d.timeoutMs === undefined ? { url } : { url, timeoutMs: d.timeoutMs }
    out.push(commands.wait(on, { key }))
  }
  if (sent.status === 'none') {
    const input = Object.assign({}, d.input, { [d.as]: waitUrl(key, d.url ?? {}) })
    const retry = def.nodes[id].retry
    out.push(
      commands.invoke(d.effect, input, retry ? { key: sendKey(id), retry } : { key: sendKey(id) }),
    )
  }
  return out
}

function directiveCommand(def: WorkflowDefinition, id: string, d: Directive, key: string): Command {
  switch (d.$directive) {
    case 'sleep':
      return commands.wait({ timer: { afterMs: d.ms } }, { key })
    case 'sleepUntil':
      return commands.wait({ timer: { at: d.at } }, { key })
    case 'invoke': {
      const retry = def.nodes[id].retry
      return commands.invoke(d.effect, d.input, retry ? { key, retry } : { key })
    }
    case 'spawn':
      return commands.spawn({ kind: d.kind, name: d.name, version: d.version }, d.input, { key })
    case 'waitFor':
      return commands.wait(
        {
          event: { type: d.type, ...(d.match !== undefined ? { match: d.match } : {}) },
          ...(d.timeoutMs !== undefined ? { timeoutMs: d.timeoutMs } : {}),
        },
        { key },
      )
    default:
      return commands.fail({ code: 'INVALID_DIRECTIVE', message: `node ${id}: unknown directive` })
  }
}

const finish = (id: string, result: Json): Command[] => [
  commands.emit('workflow.node.finished', { nodeId: id, result }),
]

function errorOf(outcome: Outcome, what: string): ErrorInfo {
  if (outcome.status === 'failed') return outcome.error
  if (outcome.status === 'timed_out') return { code: 'WAIT_TIMEOUT', message: `${what} timed out` }
  return { code: 'CANCELLED', message: `${what} was cancelled` }
}

function failNode(def: WorkflowDefinition, id: string, error: ErrorInfo): Command[] {
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
