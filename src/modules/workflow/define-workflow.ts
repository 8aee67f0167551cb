import {
  type Definition,
  DefinitionError,
  type FlowControl,
  type InferInput,
  type InferOutput,
  type Json,
  type RetryPolicy,
  type RunAttributeTypes,
  type SignalSchemas,
  type StandardSchema,
} from '../../core/module-api.js'
import { type Declarations, declarationsOf } from '../shared/declarations.js'
import type { Compensation, CompensationContext } from './compensation.js'
import type { Directive, NodeContext } from './directives.js'
import type {
  Declared,
  FinalResults,
  NodeAttributesFn,
  NodesConfig,
  OnFailure,
  WorkflowOutput,
  WorkflowTypes,
} from './workflow-types.js'

/** A node as the workflow kind runs it (`defineWorkflow` types each node more closely). */
export interface NodeSpec<I = any> {
  /** Nodes that must be finished or skipped first. */
  after?: readonly string[]
  /** Returning false skips the node. */
  when?: (ctx: { input: I; results: Record<string, any> }) => boolean
  run: (ctx: NodeContext<I>) => unknown | Directive | Promise<unknown | Directive>
  /** Attempts of the node body (and of an effect it invokes). Default: one attempt. */
  retry?: RetryPolicy
  timeoutMs?: number
  onFailure?: OnFailure
  /**
   * How to undo what the node did, should the workflow fail later: `ctx.invoke(effect, input)`
   * from the node's `result` (docs/workflows.md, "Compensation").
   */
  compensate?: (ctx: CompensationContext<I>) => Compensation
  /** Attempts of the compensation's effect (default: the effect's own policy). */
  compensateRetry?: RetryPolicy
  /** The run's attributes to set once the node finishes (docs/operating-runs.md, "Attributes"). */
  attributes?: NodeAttributesFn<I>
}

/**
 * A workflow: `I` is the input its nodes see (the schema's output), `O` what a run completes
 * with, `In` what `start` takes (the schema's input), `N` its name, `Sg` its declared signals.
 */
export interface WorkflowDefinition<
  I = any,
  O = any,
  In = I,
  N extends string = string,
  Sg extends SignalSchemas = SignalSchemas,
> extends Definition<In, O> {
  readonly kind: 'workflow'
  readonly name: N
  /** The signals its runs accept, by event type (docs/workflows.md, "Signals"). */
  readonly signals?: Sg
  readonly nodes: Readonly<Record<string, NodeSpec<I>>>
  readonly output?: (ctx: { input: I; results: Record<string, any> }) => unknown
  /** Ready nodes running at once (1–64, default 8). */
  readonly concurrency: number
  /** Node ids in declaration order. */
  readonly order: readonly string[]
  /** Nodes that run only as some node's fallback. */
  readonly fallbacks: ReadonlySet<string>
  /** Nodes with `compensate`, in the order they are compensated (reverse dependency order). */
  readonly compensable: readonly string[]
  /** Node ids, dependencies and failure policies: fingerprinted at start (`Definition.shape`). */
  readonly shape: Json
}

/** What nodes see as `input`: the schema's output type; anything without a schema. */
export type NodeInput<S> = S extends StandardSchema ? InferOutput<S> : any
/** What `start` takes: the schema's input type; anything without a schema. */
export type StartInput<S> = S extends StandardSchema ? InferInput<S> : any

/**
 * Declares a DAG workflow. Validated now: unknown dependencies, cycles and bad fallbacks are
 * errors at definition time, not at run time.
 *
 * @example
 * const hello = defineWorkflow({ name: 'hello', nodes: { greet: { run: ({ input }) => `hi ${input.name}` } } })
 */
export function defineWorkflow<
  S extends StandardSchema | undefined = undefined,
  const A = {},
  const F = {},
  W = {},
  R = {},
  O = unknown,
  D = {},
  const N extends string = string,
  Sg extends SignalSchemas = {},
>(
  config: {
    name: N
    version?: string
    /** This version is the one a start by name without a version gets (docs/engine.md). */
    default?: boolean
    /** Flow control of its runs: concurrency per key (docs/flow-control.md). */
    flow?: FlowControl
    input?: S
    /**
     * Types only, never read: `{} as { results: { draft: { text: string } } }` declares node
     * results, typed inside the nodes after them even where inference cannot reach (a sibling
     * `run` that takes `ctx`); each declared node must return its declared type.
     */
    types?: WorkflowTypes<R, D>
    nodes: NodesConfig<NodeInput<S>, A, F, W, R, D, Sg>
    /** The run's output; without it the output is every node's result by id. */
    output?: (ctx: { input: NodeInput<S>; results: FinalResults<F, W, Declared<R, D>> }) => O
    concurrency?: number
    /**
     * The run's deadline in ms from its start: past it the run fails with RUN_TIMED_OUT, its
     * waits and attempts cancelled (docs/workflows.md, "Run deadline"). A start's overrides it.
     */
    timeoutMs?: number
    /** The attributes its runs may carry, with their types (docs/operating-runs.md, "Attributes"). */
    attributes?: RunAttributeTypes
    // Declarations: `signals` (which `ctx.waitFor` then takes, typed) and `effects`.
  } & Declarations<Sg>,
): WorkflowDefinition<NodeInput<S>, WorkflowOutput<F, W, Declared<R, D>, O>, StartInput<S>, N, Sg> {
  const name = config?.name
  if (typeof name !== 'string' || name.length === 0) {
    throw new DefinitionError('defineWorkflow: name is required')
  }
  const where = `workflow ${name}`
  const nodes = (config.nodes ?? {}) as Record<string, NodeSpec>
  const order = Object.keys(nodes)
  if (order.length === 0) throw new DefinitionError(`${where}: needs at least one node`)
  const timeoutMs = config.timeoutMs
  if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0)) {
    throw new DefinitionError(`${where}: timeoutMs must be a positive integer of milliseconds`)
  }
  const declared = declarationsOf(where, config)
  const concurrency = config.concurrency ?? 8
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    throw new DefinitionError(`${where}: concurrency must be an integer from 1 to 64`)
  }
  const fallbacks = new Set<string>()
  for (const id of order) {
    const node = nodes[id]
    if (typeof node?.run !== 'function')
      throw new DefinitionError(`${where}: node ${id} needs run()`)
    for (const dep of node.after ?? []) {
      if (!(dep in nodes)) {
        throw new DefinitionError(`${where}: node ${id} runs after unknown node "${dep}"`)
      }
    }
    if (node.compensate !== undefined && typeof node.compensate !== 'function') {
      throw new DefinitionError(
        `${where}: node ${id}: compensate must be a function returning ctx.invoke(effect, input)`,
      )
    }
    const onFailure = node.onFailure
    if (onFailure !== undefined && onFailure !== 'fail' && onFailure !== 'skip') {
      const target = (onFailure as { fallback?: string }).fallback
      if (typeof target !== 'string' || !(target in nodes) || target === id) {
        throw new DefinitionError(`${where}: node ${id} has an invalid fallback "${target}"`)
      }
      fallbacks.add(target)
    }
  }
  const cycle = findCycle(order, nodes)
  if (cycle) throw new DefinitionError(`${where}: dependency cycle ${cycle.join(' -> ')}`)
  return Object.freeze({
    kind: 'workflow' as const,
    name,
    version: config.version ?? 'v1',
    ...(config.default !== undefined ? { default: config.default } : {}),
    ...(config.flow !== undefined ? { flow: config.flow } : {}),
    input: config.input,
    nodes,
    output: config.output as WorkflowDefinition['output'],
    concurrency,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(config.attributes !== undefined ? { attributes: config.attributes } : {}),
    ...declared,
    order,
    fallbacks,
    compensable: [...order].reverse().filter((id) => nodes[id].compensate !== undefined),
    shape: shapeOf(order, nodes),
  })
}

/**
 * What a recorded run of this workflow depends on: the node ids, what each runs after, and its
 * failure policy. Bodies, `when`, retries and the output function may change under the same
 * version; a change of this shape needs a new version (docs/workflows.md, "Versions").
 */
function shapeOf(order: readonly string[], nodes: Record<string, NodeSpec>): Json {
  return {
    nodes: [...order].sort().map((id) => {
      const onFailure = nodes[id].onFailure ?? 'fail'
      return {
        id,
        after: [...(nodes[id].after ?? [])].sort(),
        onFailure: typeof onFailure === 'string' ? onFailure : { fallback: onFailure.fallback },
      }
    }),
  }
}

function findCycle(order: string[], nodes: Record<string, NodeSpec>): string[] | null {
  const state = new Map<string, 'visiting' | 'done'>()
  const path: string[] = []
  const visit = (id: string): string[] | null => {
    if (state.get(id) === 'done') return null
    if (state.get(id) === 'visiting') return [...path.slice(path.indexOf(id)), id]
    state.set(id, 'visiting')
    path.push(id)
    for (const dep of nodes[id].after ?? []) {
      const found = visit(dep)
      if (found) return found
    }
    path.pop()
    state.set(id, 'done')
    return null
  }
  for (const id of order) {
    const found = visit(id)
    if (found) return found
  }
  return null
}
