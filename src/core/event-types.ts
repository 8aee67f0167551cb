/**
 * The grammar of event types, applied in one place to every event that enters a log from
 * outside (embed `signal`, `POST /runs/:id/events`, worker callbacks) or from a module (emits):
 *
 *   type    = segment *( "." segment )      at most 200 characters
 *   segment = 1*( ALPHA / DIGIT / "_" / "-" )
 *
 * The first segment names the owner: `runtime` (in any letter case) is reserved for the
 * runtime, a registered module's namespace for that module's catalog; anything else is an
 * application type.
 */
export const MAX_EVENT_TYPE_LENGTH = 200

const EVENT_TYPE = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/

/** What is wrong with `type` as an event type, or `undefined` when it follows the grammar. */
export function eventTypeProblem(type: unknown): string | undefined {
  if (typeof type !== 'string' || type.length === 0) return 'event type must be a non-empty string'
  if (type.length > MAX_EVENT_TYPE_LENGTH) {
    return `event type is ${type.length} characters; the limit is ${MAX_EVENT_TYPE_LENGTH}`
  }
  if (!EVENT_TYPE.test(type)) {
    return `event type "${type}" must be dot-separated segments of letters, digits, "_" or "-" (e.g. order.shipped)`
  }
  return undefined
}

/** The owner segment of a grammatical type, lower-cased: reserved names compare this. */
export function ownerOf(type: string): string {
  const dot = type.indexOf('.')
  return (dot < 0 ? type : type.slice(0, dot)).toLowerCase()
}

const RUNTIME_OWNED = /^runtime(?:\.|$)/i

/** `runtime`, `runtime.x`, `RUNTIME.x`: written only by the runtime itself. */
export const isRuntimeOwned = (type: string): boolean => RUNTIME_OWNED.test(type)
