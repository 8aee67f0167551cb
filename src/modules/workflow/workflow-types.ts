// The types `defineWorkflow` infers: node input from the workflow's schema, each node's result
// from what its `run` returns (or from `types.results` where declared), and `results` from the
// nodes it runs after.
//
// How far inference reaches (decisions.md, "Typed definitions" and "Declared node results"):
// TypeScript checks a node's `run` before it knows what the sibling nodes return when those
// `run`s take a context parameter, so inside a node the results of such nodes are `any` unless
// `types.results` declares them (a run that takes no parameter, or annotates it, is typed).
// `defineOrderedWorkflow` (ordered-types.ts), the nodes as a list, types them all.
// `output` runs after every node is checked, and sees every result typed; so does the definition
// (`ctx.spawn(child)` gets the child's output type).
import type { RetryPolicy, RunAttributeValue } from '../../core/module-api.js'
import type { Compensation, CompensationContext } from './compensation.js'
import type { Directive, NodeContext } from './directives.js'

export type OnFailure<Id extends string = string> = 'fail' | 'skip' | { fallback: Id }

/** What a node's `run` return becomes: a directive's outcome, else the value (undefined → null). */
export type NodeResult<T> =
  Awaited<T> extends infer V
    ? V extends Directive<infer U>
      ? U
      : V extends void
        ? null
        : V
    : never

/** Results TypeScript had not inferred when it checked a node stay open (`any`). */
type Known<T> = unknown extends T ? any : T

/** What a `run` may return for a node whose result is declared `T`: the value or a directive. */
type Returns<T> = T | Directive<T> | Promise<T | Directive<T>>

/** What node `K`'s `run` returns: inferred (`Out`), or checked against its declared type. */
type RunReturn<Out, D, K> = [keyof D] extends [never]
  ? Out
  : K extends keyof D
    ? Returns<D[K]>
    : Out

/** The ids in node `K`'s `after` list (`A` holds every node's list as written). */
type AfterOf<A, K> = K extends keyof A
  ? A[K] extends readonly (infer Id)[]
    ? Id & string
    : never
  : never

/** Every node upstream of `K`, breadth first; a cycle (refused at definition) ends the walk. */
export type UpstreamOf<A, K, Seen = never> = [K] extends [never]
  ? Seen
  : UpstreamOf<A, Exclude<AfterOf<A, K>, Seen>, Seen | AfterOf<A, K>>

/** What each `run` returns (`R`), with the types declared in `types.results` (`D`) in place. */
export type Declared<R, D> = [keyof D] extends [never]
  ? R
  : { [P in keyof R]: P extends keyof D ? D[P] : R[P] }

/** Node `P`'s result, or its fallback's when it names one (the fallback's result stands in). */
type ResultOf<R, F, P> =
  | NodeResult<R[P & keyof R]>
  | (P extends keyof F
      ? F[P] extends { fallback: infer X }
        ? NodeResult<R[X & keyof R]>
        : never
      : never)

/** `ctx.results` inside node `K`: its upstream nodes typed, any other id `unknown`. */
export type ResultsFor<A, F, R, K> = {
  readonly [P in UpstreamOf<A, K> & keyof R]: Known<ResultOf<R, F, P>>
} & { readonly [id: string]: unknown }

/** Nodes absent from the final results: a `when`, `onFailure: 'skip'`, or only a fallback. */
type MaySkip<F, W, P> =
  | (P extends keyof W ? (unknown extends W[P] ? never : P) : never)
  | (P extends keyof F ? (F[P] extends 'skip' ? P : never) : never)
  | { [Q in keyof F]: F[Q] extends { fallback: infer X } ? X : never }[keyof F]

/** `results` of `output`: every node's result, optional where the node may be absent. */
export type FinalResults<F, W, R> = {
  readonly [P in Exclude<keyof R, MaySkip<F, W, keyof R>>]: Known<ResultOf<R, F, P>>
} & {
  readonly [P in Extract<keyof R, MaySkip<F, W, keyof R>>]?: Known<ResultOf<R, F, P>>
}

/** The context of node `K` (generic in its arguments so checking it fixes no inference). */
type NodeFn<I, A, F, R, K, Out, Sg> = <
  Args extends [ctx: NodeContext<I, ResultsFor<A, F, R, K>, Sg>],
>(
  ...args: Args
) => Out

type WhenFn<I, A, F, R, K> = <Args extends [ctx: { input: I; results: ResultsFor<A, F, R, K> }]>(
  ...args: Args
) => boolean

/**
 * The `nodes` of `defineWorkflow`, as the intersection TypeScript infers from: `A` (each
 * node's `after`), `F` (`onFailure`), `W` (`when`) are read from the object as written; `R`
 * (what each `run` returns) from the functions. A node declared in `D` (`types.results`) must
 * return its declared type (or a directive with that outcome). `Sg` are the workflow's declared
 * signals, which type `ctx.waitFor`.
 */
export type NodesConfig<I, A, F, W, R, D = {}, Sg = {}> = {
  [K in keyof A]: { after?: A[K] & readonly (keyof A)[] }
} & {
  [K in keyof F]: { onFailure?: F[K] & OnFailure<keyof A & string> }
} & { [K in keyof W]: { when?: W[K] } } & {
  [K in keyof R]: {
    run: NodeFn<I, A, F, Declared<R, D>, K, RunReturn<R[K], D, K>, Sg>
    /** Returning false skips the node. */
    when?: WhenFn<I, A, F, Declared<R, D>, K>
    /** Attempts of the node body (and of an effect it invokes). Default: one attempt. */
    retry?: RetryPolicy
    timeoutMs?: number
    /** Undoes the node's effect if the workflow fails later (docs/workflows.md, "Compensation"). */
    compensate?: (ctx: CompensationContext<I>) => Compensation
    /** Attempts of the compensation's effect (default: the effect's own policy). */
    compensateRetry?: RetryPolicy
    /**
     * The run's attributes to set once the node finishes, from its result (null removes one;
     * docs/operating-runs.md, "Attributes").
     */
    attributes?: NodeAttributesFn<I>
  }
}

/** A node's `attributes`: from the run's input, the node's result and the results so far. */
export type NodeAttributesFn<I> = (ctx: {
  input: I
  result: any
  results: Record<string, any>
}) => Record<string, RunAttributeValue | null>

/** The output of a workflow: what `output` returns, else every node's result by id. */
export type WorkflowOutput<F, W, R, O> = unknown extends O ? FinalResults<F, W, R> : O

/**
 * `types` of `defineWorkflow` (types only, never read at run time): `results` declares the
 * result type of nodes by id, so that nodes after them see it typed. An id that is not a node
 * of the workflow is a type error (checked once TypeScript knows the node ids: before that, a
 * failed check would drop the contextual types of every node).
 */
export type WorkflowTypes<R, D> = {
  results?: D &
    ([keyof R] extends [never] ? unknown : { readonly [P in Exclude<keyof D, keyof R>]: never })
}
