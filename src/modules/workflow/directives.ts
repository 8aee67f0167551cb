import type {
  Definition,
  EffectDefinition,
  ErrorInfo,
  InferOutput,
  InputArgs,
  Json,
  JsonObject,
  OutputOf,
  WaitUrlOptions,
} from '../../core/module-api.js'
import type { ApprovalDecision, GateDirective, GateSpec } from '../approval/index.js'

declare const RESULT: unique symbol

/**
 * What a node's `run` may return instead of a value: one durable step, recorded as JSON and
 * carried out by the workflow kind. Its outcome becomes the node's result, of type `T` (a
 * type only: nothing holds it at run time).
 */
export type Directive<T = unknown> = DirectiveStep & { readonly [RESULT]?: T }

export type DirectiveStep =
  | { $directive: 'sleep'; ms: number }
  | { $directive: 'sleepUntil'; at: number }
  | { $directive: 'invoke'; effect: string; input: Json }
  | { $directive: 'spawn'; kind: string; name: string; version: string; input: Json }
  | { $directive: 'waitFor'; type: string; match?: Json; timeoutMs?: number }
  | {
      $directive: 'waitForUrl'
      effect: string
      input: JsonObject
      as: string
      event?: string
      timeoutMs?: number
      url?: JsonObject
    }
  | GateDirective
  | MapDirective

/** One item's step in a fan-out: an effect or a child. */
export type ItemStep = Extract<DirectiveStep, { $directive: 'invoke' | 'spawn' }>

/** `ctx.map(…)`: one node fanning out to an effect or a child per item (docs/workflows.md). */
export interface MapDirective {
  $directive: 'map'
  items: ItemStep[]
  concurrency: number
  onItemFailure: ItemFailurePolicy
}

/**
 * What a failed item does to its fan-out: `'fail'` fails the node at the first failure
 * (the items still running are cancelled); `'collect'` runs every item and the result holds
 * each one's outcome; `'skip'` runs every item and the result leaves the failed ones out.
 */
export type ItemFailurePolicy = 'fail' | 'collect' | 'skip'

export interface MapOptions<P extends ItemFailurePolicy = 'fail'> {
  /** Items running at once, 1 to `MAX_MAP_ITEMS` (default 16). */
  concurrency?: number
  /** Default `'fail'`. */
  onItemFailure?: P
}

/** An item's outcome in a `'collect'` fan-out's result. */
export type ItemOutcome<R> = { ok: true; value: R } | { ok: false; error: ErrorInfo }

/** The result of a fan-out: the items' results in input order (per the failure policy). */
export type MapResult<R, P extends ItemFailurePolicy> = P extends 'collect' ? ItemOutcome<R>[] : R[]

/** The most items one `ctx.map` fans out to (docs/workflows.md, "Fan-out"). */
export const MAX_MAP_ITEMS = 5_000
const DEFAULT_MAP_CONCURRENCY = 16
const ITEM_FAILURE_POLICIES: readonly string[] = ['fail', 'collect', 'skip']

/** A fan-out's bad input: the node fails with this code, never retried. */
export class FanOutError extends Error {
  readonly code = 'INVALID_FAN_OUT'
}

/**
 * The fan-out directive of `items`, each item's step made by `step` (which must return
 * `ctx.invoke(…)` or `ctx.spawn(…)`). Throws FanOutError for bad input.
 */
export function mapDirective(
  items: unknown,
  step: (item: unknown, index: number) => unknown,
  options: MapOptions<ItemFailurePolicy> = {},
): MapDirective {
  if (!Array.isArray(items)) {
    throw new FanOutError(
      `ctx.map needs an array of items, got ${items === null ? 'null' : typeof items}`,
    )
  }
  if (items.length > MAX_MAP_ITEMS) {
    throw new FanOutError(
      `ctx.map takes at most ${MAX_MAP_ITEMS} items, got ${items.length}: split the list over several nodes, or spawn children that each map a part`,
    )
  }
  if (typeof step !== 'function') throw new FanOutError('ctx.map needs a function for each item')
  const concurrency = options?.concurrency ?? DEFAULT_MAP_CONCURRENCY
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_MAP_ITEMS) {
    throw new FanOutError(`ctx.map: concurrency must be an integer from 1 to ${MAX_MAP_ITEMS}`)
  }
  const onItemFailure = options?.onItemFailure ?? 'fail'
  if (!ITEM_FAILURE_POLICIES.includes(onItemFailure)) {
    throw new FanOutError(
      `ctx.map: onItemFailure must be 'fail', 'collect' or 'skip', got ${JSON.stringify(onItemFailure)}`,
    )
  }
  const steps = items.map((item, index) => {
    const made = step(item, index)
    if (!isDirective(made) || (made.$directive !== 'invoke' && made.$directive !== 'spawn')) {
      throw new FanOutError(
        `ctx.map: the function must return ctx.invoke(…) or ctx.spawn(…) for each item; item ${index} gave ${isDirective(made) ? `ctx.${made.$directive}(…)` : (JSON.stringify(made) ?? 'undefined')}`,
      )
    }
    return made as ItemStep
  })
  return { $directive: 'map', items: steps, concurrency, onItemFailure }
}

/** `ctx.waitForUrl(options)` (docs/schedules.md, "Wait URLs"). */
export interface WaitForUrlOptions extends WaitUrlOptions {
  /** The effect that sends the URL (e-mail, Slack): it runs before the node parks. */
  send: string | EffectDefinition
  /** The effect's input; the URL (`{ url, token, tokenId, expiresAt }`) is added as `as`. */
  input?: JsonObject
  /** The field of the input the URL goes in; default `waitUrl`. */
  as?: string
  /** A module input (`defineInput`) whose schema and `accept` check the posted JSON. */
  event?: string
  /** The node fails with WAIT_TIMEOUT if no POST came by then (the URL expires with it). */
  timeoutMs?: number
}

/** The result of an effect object invoked from a node. */
type EffectResult<E> = E extends EffectDefinition<any, infer O> ? Awaited<O> : unknown
type EffectInput<E> = E extends EffectDefinition<infer I, any> ? I : unknown

export const isDirective = (value: unknown): value is Directive =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  typeof (value as any).$directive === 'string'

/** `ctx.waitFor`'s options. */
export interface WaitForOptions {
  /** Fields the event's payload must contain. */
  match?: Json
  /** The node fails with WAIT_TIMEOUT past it. */
  timeoutMs?: number
}

/**
 * `ctx.waitFor` of a workflow that declares signals `Sg`: only a declared type, its result the
 * payload its schema gives. Without declared signals, any type; the result `P` (untyped unless
 * given).
 */
export type WaitForFn<Sg> = [keyof Sg] extends [never]
  ? <P = any>(type: string, options?: WaitForOptions) => Directive<P>
  : <T extends keyof Sg & string>(
      type: T,
      options?: WaitForOptions,
    ) => Directive<InferOutput<Sg[T]>>

export interface NodeContext<I = any, R = Record<string, any>, Sg = {}> {
  input: I
  /**
   * Results of finished nodes by id (skipped nodes are absent). In `defineWorkflow`, typed for
   * the nodes this one runs after (directly or not); other ids are `unknown`.
   */
  results: R
  nodeId: string
  runId: string
  threadId: string
  attempt: number
  /** Aborted when the workflow is cancelled. */
  signal: AbortSignal
  /** Result: `{ at }` once the durable timer fires. */
  sleep(ms: number): Directive<{ at: number }>
  sleepUntil(epochMs: number): Directive<{ at: number }>
  /** Result: the effect's result (typed when given the effect object). */
  invoke<E extends string | EffectDefinition>(
    effect: E,
    input?: E extends EffectDefinition ? EffectInput<E> : unknown,
  ): Directive<E extends EffectDefinition ? EffectResult<E> : any>
  /** Result: the child's output; the input is checked against the child's schema type. */
  spawn<D extends Definition>(definition: D, ...input: InputArgs<D>): Directive<OutputOf<D>>
  /**
   * Result: the matched event's payload: typed by the workflow's declared `signals` (only a
   * declared type then), else `P` (untyped unless given).
   */
  waitFor: WaitForFn<Sg>
  /**
   * Result: the JSON posted to a wait URL made for this node, which `options.send` sends
   * before the node parks (the URL's token never enters the log).
   */
  waitForUrl<P = any>(options: WaitForUrlOptions): Directive<P>
  /** Result: the decision, or `{ approvalId, outcome: 'timed_out' }`. */
  gate(spec: GateSpec): Directive<ApprovalDecision>
  /** Result: the evaluation `{ route, score?, reason? }`, its route typed by the evaluator. */
  evaluate<D extends Definition>(evaluator: D, ...input: InputArgs<D>): Directive<OutputOf<D>>
  /**
   * Fan-out over a list known at run time: `step` returns `ctx.invoke(…)` or `ctx.spawn(…)`
   * for each item. Result: the items' results in input order (`'collect'`: each item's
   * outcome). At most `MAX_MAP_ITEMS` items.
   */
  map<T, R, P extends ItemFailurePolicy = 'fail'>(
    items: readonly T[],
    step: (item: T, index: number) => Directive<R>,
    options?: MapOptions<P>,
  ): Directive<MapResult<R, P>>
}

export function directiveBuilders(
  effectType: (effect: EffectDefinition) => string | undefined,
): Pick<
  NodeContext,
  'sleep' | 'sleepUntil' | 'invoke' | 'spawn' | 'waitFor' | 'waitForUrl' | 'gate' | 'evaluate'
> {
  // Loosely typed inside: NodeContext's signatures carry the result and input types.
  const spawn = (definition: Definition, input: unknown = null): Directive<any> => {
    if (!definition || typeof definition.kind !== 'string' || typeof definition.name !== 'string') {
      throw new TypeError('ctx.spawn needs a definition object')
    }
    return {
      $directive: 'spawn',
      kind: definition.kind,
      name: definition.name,
      version: definition.version,
      input: (input ?? null) as Json,
    }
  }
  return {
    sleep: (ms) => {
      if (!Number.isFinite(ms) || ms < 0) throw new TypeError('ctx.sleep needs a non-negative ms')
      return { $directive: 'sleep', ms }
    },
    sleepUntil: (at) => {
      if (!Number.isFinite(at)) throw new TypeError('ctx.sleepUntil needs an epoch ms')
      return { $directive: 'sleepUntil', at }
    },
    invoke: (effect: string | EffectDefinition, input: unknown = null): Directive<any> => {
      const type = typeof effect === 'string' ? effect : effectType(effect)
      if (!type) {
        throw new TypeError(
          `ctx.invoke: the effect object is not registered by any module: add it to a module's effects (defineModule({ namespace, effects: { name: effect } })) and that module to createEngine's modules; in a test, replaceEffects from skein/testing swaps its implementation and keeps the object registered`,
        )
      }
      return { $directive: 'invoke', effect: type, input: input as Json }
    },
    spawn,
    waitFor: (type: string, options: WaitForOptions = {}) => ({
      $directive: 'waitFor',
      type,
      ...options,
    }),
    waitForUrl: (options: WaitForUrlOptions): Directive<any> => {
      const effect = typeof options?.send === 'string' ? options.send : effectType(options?.send)
      if (!effect) throw new TypeError('ctx.waitForUrl needs { send }: a registered effect')
      const url: JsonObject = {}
      if (options.expiresInMs !== undefined) url.expiresInMs = options.expiresInMs
      if (options.singleUse !== undefined) url.singleUse = options.singleUse
      if (options.signature !== undefined) url.signature = options.signature as JsonObject
      const directive: Extract<DirectiveStep, { $directive: 'waitForUrl' }> = {
        $directive: 'waitForUrl',
        effect,
        input: options.input ?? {},
        as: options.as ?? 'waitUrl',
        url,
      }
      if (options.event !== undefined) directive.event = options.event
      if (options.timeoutMs !== undefined) directive.timeoutMs = options.timeoutMs
      return directive
    },
    gate: (spec) => {
      if (typeof spec?.title !== 'string') throw new TypeError('ctx.gate needs { title }')
      return Object.assign({}, spec, { $directive: 'gate' as const })
    },
    evaluate: (evaluator: Definition, input?: unknown) => {
      if (evaluator?.kind !== 'evaluator') {
        throw new TypeError('ctx.evaluate needs an evaluator definition (defineEvaluator)')
      }
      return spawn(evaluator, input)
    },
  }
}
