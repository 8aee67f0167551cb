import type { Definition } from './definition.js'
import type { EffectDefinition } from './effect.js'
import type { Json } from './json.js'
import type { KindDefinition } from './kind.js'
import type { ProjectionDefinition } from './projection.js'
import type { ProjectorDefinition } from './projector.js'
import type { StandardSchema } from './schema.js'

/**
 * A catalog entry: a schema alone declares an *internal* event (written only by the module's
 * kinds and effects, refused from outside); `defineInput(schema)` declares an *input* (also
 * accepted from outside through `signal` and `POST /runs/:id/events`).
 */
export type CatalogEntry = StandardSchema | InputEvent

export interface ModuleConfig {
  /** Prefix of the module's event and effect types: `payments` → `payments.charge`. */
  namespace: string
  version?: string
  /** Namespaces of modules that must be registered too. */
  dependencies?: readonly string[]
  /** Event catalog, keyed without the namespace. Internal unless declared with `defineInput`. */
  events?: Record<string, CatalogEntry>
  effects?: Record<string, EffectDefinition>
  /** Projections by their public name (unique across modules). */
  projections?: Record<string, ProjectionDefinition>
  /** Thread kinds by name (unique across modules). */
  kinds?: Record<string, KindDefinition>
  definitions?: readonly Definition[]
  /** Post-commit projectors the module brings (docs/projectors.md); names unique per engine. */
  projectors?: readonly ProjectorDefinition[]
}

export interface Module extends Readonly<ModuleConfig> {
  readonly kindOf: 'module'
}

/** Declares a runtime module: the public API every module, ours and yours, is built on. */
export function defineModule(config: ModuleConfig): Module {
  return Object.freeze({ ...config, kindOf: 'module' as const })
}

/** An open wait of the run that an incoming event would satisfy. */
export interface InputWaiter {
  readonly waitId: string
  readonly threadId: string
  /** What the waiting kind recorded with the wait (`{ event: { type, match, expect } }`). */
  readonly expect?: Json
}

/** What an input's `accept` sees: the run as it is before the signal is written. */
export interface InputContext {
  readonly runId: string
  /** The thread the event is addressed to (`EventInput.threadId`), if any. */
  readonly threadId: string | undefined
  /**
   * Who sent the event: the identity the HTTP `authorize` hook returned, or the `identity`
   * option of embed `signal`; `undefined` when the caller is not authenticated.
   */
  readonly identity: Json | undefined
  /**
   * The run's open waits this event would satisfy (same type, `match` contained in the payload,
   * the thread rule), without those an earlier event of the same signal satisfies.
   */
  readonly waiting: readonly InputWaiter[]
  /** Refuses the event with `INVALID_EVENT`: nothing of the signal is written. */
  refuse(message: string, details?: Json): never
}

/** An event a module accepts from outside (see `defineInput`). */
export interface InputEvent<T = any> {
  readonly kindOf: 'input'
  /** Validates every incoming payload: must check, not only type (not `payload<T>()`). */
  readonly payload: StandardSchema<any, T>
  /**
   * Checks the event against the run before anything is written and returns the payload to
   * record (for example with the sender's identity added). Synchronous and pure: it runs in
   * the run's queue, once per attempt to write.
   */
  readonly accept?: (payload: T, ctx: InputContext) => Json
}

/**
 * Declares a catalog event as an input: accepted from outside, validated by `payload` (a
 * schema that checks), then by `accept` against the run.
 *
 * @example
 * events: {
 *   'refund.requested': defineInput(z.object({ orderId: z.string() })),
 *   'refund.paid': payload<{ orderId: string }>(), // internal: only the module writes it
 * }
 */
export function defineInput<T>(
  payload: StandardSchema<any, T>,
  options: { accept?: (payload: T, ctx: InputContext) => Json } = {},
): InputEvent<T> {
  return Object.freeze({ kindOf: 'input' as const, payload, accept: options.accept })
}

export const isInputEvent = (entry: unknown): entry is InputEvent =>
  typeof entry === 'object' && entry !== null && (entry as InputEvent).kindOf === 'input'
