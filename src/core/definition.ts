import type { RunAttributeTypes } from './attributes.js'
import type { EffectDefinition } from './effect.js'
import type { EventInput } from './envelope.js'
import type { FlowControl } from './flow.js'
import type { Json } from './json.js'
import type { InferInput, StandardSchema } from './schema.js'

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
  /**
   * The signals its runs accept from outside, by event type: each payload's schema. A signal of
   * such a type sent to a run of this definition is validated by it before anything is written
   * (`INVALID_EVENT`, HTTP 400), and `ctx.waitFor` and the typed client are typed from it.
   */
  readonly signals?: SignalSchemas
  /**
   * The effects its runs invoke (objects or registered types): `createEngine` refuses a
   * definition whose declared effect no module registers (MODULE_COMPOSITION), at startup
   * rather than when a run first invokes it.
   */
  readonly effects?: readonly (EffectDefinition | string)[]
}

/** The signals a definition accepts, by event type: each payload's Standard Schema. */
export type SignalSchemas = Readonly<Record<string, StandardSchema>>

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

/**
 * The payload of each signal `D` declares (its schema's input type), by event type; `{}` when it
 * declares none, or when its signals are not known to the type (`signals: SignalSchemas`).
 */
export type SignalPayloads<D> = D extends { readonly signals?: infer S }
  ? S extends SignalSchemas
    ? string extends keyof S
      ? {}
      : { [K in keyof S & string]: InferInput<S[K]> }
    : {}
  : {}

/** An event that is one of the signals `D` declares (a union of definitions: any of theirs). */
export type SignalEventOf<D> = D extends Definition
  ? {
      [K in keyof SignalPayloads<D>]: {
        type: K
        payload: SignalPayloads<D>[K]
        threadId?: string
      }
    }[keyof SignalPayloads<D>]
  : never

/** Definitions as a type, `typeof definitions`: what a typed client or engine knows. */
export type DefinitionList = readonly Definition[]

/**
 * The events of a `signal` as they must be, told of the definitions `Defs`: an event of a
 * signal type one of them declares carries that signal's payload; any other type is left as
 * written (module inputs such as `approval.decided`, application events).
 */
export type CheckedSignals<E extends readonly EventInput[], Defs extends DefinitionList> = {
  [I in keyof E]: E[I] extends { type: infer T }
    ? T extends SignalEventOf<Defs[number]>['type']
      ? Extract<SignalEventOf<Defs[number]>, { type: T }>
      : E[I]
    : E[I]
}

/** The names of the definitions in `Defs` (`string` where a name is not a literal). */
export type DefinitionName<Defs extends DefinitionList> = Defs[number]['name']

type Named<D, N> = D extends Definition ? (N extends D['name'] ? D : never) : never

/** The definitions of `Defs` named `N` (one whose name is not a literal answers to any name). */
export type DefinitionNamed<Defs extends DefinitionList, N> = Named<Defs[number], N>

/** What `result` resolves with for a definition: its output, `Json | undefined` when untyped. */
export type ResultOf<D> = unknown extends OutputOf<D> ? Json | undefined : OutputOf<D>

/**
 * Whether a run's state is of `definition` (its kind and name, or only its name when given a
 * name): `getRun`/`result` with a definition check it, so the output type they give holds.
 */
export function runIsOf(
  state: { kind: string; definitionName: string },
  definition: string | { kind: string; name: string },
): boolean {
  return typeof definition === 'string'
    ? state.definitionName === definition
    : state.definitionName === definition.name && state.kind === definition.kind
}

/** The message of a `getRun`/`result` whose run is of another definition. */
export const runNotOfMessage = (
  runId: string,
  state: { kind: string; definitionName: string },
  definition: string | { kind: string; name: string },
): string =>
  `run ${runId} is a run of ${state.kind}:${state.definitionName}, not of ${typeof definition === 'string' ? definition : `${definition.kind}:${definition.name}`}: pass the run's own definition, or none`

/** A definition named without the object (`startRun`, spawn by name). */
export interface DefinitionRef {
  kind: string
  name: string
  version?: string
}

export const definitionLabel = (d: DefinitionRef): string =>
  `${d.kind}:${d.name}${d.version ? `@${d.version}` : ''}`

/**
 * `result(runId, definition?, options?)` and `result(runId, options?)`: the definition (an
 * object with kind and name, or a name for the client) and the options, whichever were passed.
 */
export function splitResultArgs<D, O>(
  args: readonly unknown[],
): [definition: D | undefined, options: O | undefined] {
  const [first, second] = args
  const isDefinition =
    typeof first === 'string' ||
    (typeof first === 'object' &&
      first !== null &&
      typeof (first as { kind?: unknown }).kind === 'string' &&
      typeof (first as { name?: unknown }).name === 'string')
  return isDefinition ? [first as D, second as O | undefined] : [undefined, first as O | undefined]
}
