import type { RunAttributeTypes } from './attributes.js'
import type { FlowControl } from './flow.js'
import type { Json } from './json.js'
import type { StandardSchema } from './schema.js'

declare const TYPES: unique symbol

/**
 * Something startable or spawnable: a definition of some kind. `I` is the input a start or a
 * spawn takes, `O` the output a run completes with; both are types only (nothing holds them at
 * run time), so `engine.start(definition, input)` and `ctx.spawn` can check the input.
 */
export interface Definition<I = any, O = any> {
  readonly kind: string
  readonly name: string
  readonly version: string
  readonly input?: StandardSchema
  /**
   * The version a ref without a version means (`startRun`, `POST /runs`, spawn by name): at
   * most one per kind and name. Without one, the highest version (version-order.ts).
   */
  readonly default?: boolean
  /** Type-only: never set. */
  readonly [TYPES]?: { readonly input: I; readonly output: O }
  /**
   * What recorded runs depend on (for a workflow: its nodes, their dependencies and failure
   * policies), as JSON. The engine records a fingerprint of it when a thread starts and
   * refuses to go on with a thread whose registered definition's shape differs
   * (DEFINITION_CHANGED): change the version instead (docs/workflows.md, "Versions").
   * Definitions without a shape are not checked.
   */
  readonly shape?: Json
  /** Flow control of its runs: concurrency per key (docs/flow-control.md). */
  readonly flow?: FlowControl<I>
  /**
   * The run's deadline, when this definition is started as a run: past it the run fails with
   * RUN_TIMED_OUT (docs/workflows.md, "Run deadline"). A start's `timeoutMs` overrides it.
   */
  readonly timeoutMs?: number
  /**
   * The attributes its runs may carry, with their types (docs/operating-runs.md,
   * "Attributes"): set at start and by the run, searched by `listRunSummaries`.
   */
  readonly attributes?: RunAttributeTypes
}

/** The input a definition's start or spawn takes (`unknown` for an untyped definition). */
export type InputOf<D> = D extends { readonly [TYPES]?: { readonly input: infer I } } ? I : unknown

/** The output a run of the definition completes with. */
export type OutputOf<D> = D extends { readonly [TYPES]?: { readonly output: infer O } }
  ? O
  : unknown

/** What a run of the definition's `state.output` is: its output type, `Json` when untyped. */
export type RunOutputOf<D> = unknown extends OutputOf<D> ? Json : OutputOf<D>

/** The input argument of `start`/`spawn`: optional when the definition accepts `undefined`. */
export type InputArgs<D> = undefined extends InputOf<D> ? [input?: InputOf<D>] : [input: InputOf<D>]

/** A definition named without the object (`startRun`, spawn by name). */
export interface DefinitionRef {
  kind: string
  name: string
  version?: string
}

export const definitionLabel = (d: DefinitionRef): string =>
  `${d.kind}:${d.name}${d.version ? `@${d.version}` : ''}`
