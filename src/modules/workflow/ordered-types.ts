// The types of `defineOrderedWorkflow`: the nodes as a list in which each node comes after the
// nodes it runs after (and after its fallback). Each list position has type parameters of its
// own, and a node's `ctx` names only the positions before it, so TypeScript infers a node's
// result (left to right, TypeScript 4.7's inference inside one expression) before it checks
// the nodes listed after it: every upstream result is typed inside `run` and `when`, whatever
// the `run`s take (docs/decisions.md, "Typed results inside nodes").
import type {
  EffectDefinition,
  FlowControl,
  RetryPolicy,
  SignalSchemas,
  StandardSchema,
} from '../../core/module-api.js'
import type { NodeInput, StartInput, WorkflowDefinition } from './define-workflow.js'
import type { NodeContext } from './directives.js'
import type { FinalResults, OnFailure, ResultsFor, WorkflowOutput } from './workflow-types.js'

/** One list position: node id, `after` as written, what `run` returns, `when`, `onFailure`. */
export type OrderedEntry = readonly [
  id: unknown,
  after: unknown,
  run: unknown,
  when: unknown,
  onFailure: unknown,
]

/**
 * The ids of the positions in `E` (an unused position's id is `never`). Where it constrains
 * `after` and `onFailure` it is `NoInfer`: else an id written there would widen an earlier id.
 */
type IdsOf<E extends readonly OrderedEntry[]> = E[number][0] & string

/** One column of the positions in `E`, by node id: 1 `after`, 2 run, 3 `when`, 4 `onFailure`. */
type Column<E extends readonly OrderedEntry[], C extends 1 | 2 | 3 | 4> = {
  [X in E[number] as X[0] & string]: X[C]
}

/** `ctx.results` of node `K` listed after the positions `Prev`. */
type UpstreamResults<Prev extends readonly OrderedEntry[], K, A> = ResultsFor<
  Column<[...Prev, [K, A, unknown, unknown, unknown]], 1>,
  Column<Prev, 4>,
  Column<Prev, 2>,
  K
>

/** A node of the list: `Prev` are the positions before it, which alone its `ctx` names. */
export type OrderedNode<S, Prev extends readonly OrderedEntry[], K, A, R, W, F, Sg = {}> = {
  /** The node's id, unique in the workflow. */
  id: K
  /** Nodes that must be finished or skipped first: nodes listed before this one. */
  after?: A & readonly NoInfer<IdsOf<Prev>>[]
  /** Returning false skips the node. */
  when?: W & ((ctx: { input: NodeInput<S>; results: UpstreamResults<Prev, K, A> }) => boolean)
  run: (ctx: NodeContext<NodeInput<S>, UpstreamResults<Prev, K, A>, Sg>) => R
  /** Attempts of the node body (and of an effect it invokes). Default: one attempt. */
  retry?: RetryPolicy
  timeoutMs?: number
  /** A fallback is a node listed before this one. */
  onFailure?: F & OnFailure<NoInfer<IdsOf<Prev>>>
}

/** The config of `defineOrderedWorkflow`: `All` are every position, `Nodes` the list's type. */
export type OrderedWorkflowConfig<
  S,
  O,
  All extends readonly OrderedEntry[],
  Nodes,
  N extends string = string,
  Sg = {},
> = {
  name: N
  version?: string
  /** This version is the one a start by name without a version gets (docs/engine.md). */
  default?: boolean
  /** Flow control of its runs: concurrency per key (docs/flow-control.md). */
  flow?: FlowControl
  input?: S
  /** The signals its runs accept, by event type: each payload's schema (docs/workflows.md). */
  signals?: Sg
  /** The effects its nodes invoke, checked to be registered at `createEngine`. */
  effects?: readonly (EffectDefinition | string)[]
  /** The nodes, each listed after the nodes it runs after and after its fallback. */
  nodes: Nodes
  /** The run's output; without it the output is every node's result by id. */
  output?: (ctx: {
    input: NodeInput<S>
    results: FinalResults<Column<All, 4>, Column<All, 3>, Column<All, 2>>
  }) => O
  concurrency?: number
  /** The run's deadline in ms from its start (docs/workflows.md, "Run deadline"). */
  timeoutMs?: number
}

/** What `defineOrderedWorkflow` returns: a workflow definition like `defineWorkflow`'s. */
export type OrderedWorkflowDefinition<
  S extends StandardSchema | undefined,
  O,
  All extends readonly OrderedEntry[],
  N extends string = string,
  Sg extends SignalSchemas = {},
> = WorkflowDefinition<
  NodeInput<S>,
  WorkflowOutput<Column<All, 4>, Column<All, 3>, Column<All, 2>, O>,
  StartInput<S>,
  N,
  Sg
>
