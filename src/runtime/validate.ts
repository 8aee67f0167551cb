import type { WaitFor } from '../core/api-types.js'
import type { EventInput } from '../core/envelope.js'
import {
  type ErrorInfo,
  InvalidEventError,
  InvalidInputError,
  InvalidRequestError,
  type SkeinError,
} from '../core/errors.js'
import {
  eventTypeProblem,
  isRuntimeOwned,
  MAX_EVENT_TYPE_LENGTH,
  ownerOf,
} from '../core/event-types.js'
import { checkJson, type Json, type JsonProblem, jsonByteLength } from '../core/json.js'
import type { InputEvent } from '../core/module.js'
import type { Registry } from '../core/registry.js'
import { formatIssues, type StandardSchema } from '../core/schema.js'

type ErrorClass = new (message: string, details?: Json) => SkeinError

/**
 * What may be a value or a promise of one. Schemas (and inline handlers) may answer
 * asynchronously, yet almost none do: the wake pass stays synchronous until one does. Two loops
 * carry that duality, the decide rounds' (decide-rounds.ts) and the recording of settled
 * attempts (attempt-outcomes.ts); a promise per step would cost ~10% of the engine's time
 * (docs/performance.md; decisions.md, "Decide rounds … do not allocate promises").
 */
export type MaybePromise<T> = T | Promise<T>

/** `next(value)`, at once when `value` is not a promise. */
export const andThen = <T, R>(
  value: MaybePromise<T>,
  next: (value: T) => MaybePromise<R>,
): MaybePromise<R> => (value instanceof Promise ? value.then(next) : next(value))

/** Runs a Standard Schema (sync or async) and returns its output, or throws `errorClass`. */
export function validateWith(
  schema: StandardSchema | undefined,
  value: unknown,
  what: string,
  errorClass: ErrorClass = InvalidInputError,
): MaybePromise<unknown> {
  if (!schema) return value
  const result = schema['~standard'].validate(value)
  return andThen(result, (r) => {
    if (r.issues) {
      throw new errorClass(`${what}: ${formatIssues(r.issues)}`, {
        issues: r.issues.map((i) => ({
          message: i.message,
          path: (i.path ?? []).map((p) => String(typeof p === 'object' && p !== null ? p.key : p)),
        })),
      })
    }
    return r.value
  })
}

/**
 * `value` as the log would hold it: plain JSON (`undefined` as null), nesting ≤ 64, at most
 * `maxBytes` serialized. Says what is wrong instead of throwing, for callers that word it.
 */
export function jsonWithin(
  value: unknown,
  maxBytes: number,
): { ok: true; value: Json } | { ok: false; problem: JsonProblem } | { ok: false; bytes: number } {
  const checked = checkJson(value === undefined ? null : value)
  // The bound over-estimates the size: below the limit, no serialising at all.
  if (!checked.ok || checked.maxBytes <= maxBytes) return checked
  const bytes = jsonByteLength(checked.value)
  return bytes > maxBytes ? { ok: false, bytes } : checked
}

/** JSON-only, nesting ≤ 64, at most `maxBytes` serialized; returns the cleaned value. */
export function requireJson(
  value: unknown,
  what: string,
  maxBytes: number,
  errorClass: ErrorClass = InvalidInputError,
): Json {
  const checked = jsonWithin(value, maxBytes)
  if (checked.ok) return checked.value
  if ('problem' in checked) {
    throw new errorClass(`${what}: ${checked.problem.message} at ${checked.problem.path}`, {
      path: checked.problem.path,
    })
  }
  throw new errorClass(
    `${what}: ${checked.bytes} bytes is over the limit of ${maxBytes} (limits.maxEventBytes)`,
    {
      bytes: checked.bytes,
      limit: maxBytes,
    },
  )
}

/** An event as the log will hold it, and the input declaration it was accepted under. */
export interface CheckedEvent {
  type: string
  payload: Json
  threadId?: string
  /** Set for a module's input: its `accept` still runs against the run, in the queue. */
  input?: InputEvent
}

/**
 * An event sent from outside (embed `signal`, `POST /runs/:id/events`): the type follows the
 * grammar (event-types.ts) and is not the runtime's; a type in a registered module's
 * namespace must be one of its inputs and match the input's schema; any other type is an
 * application event, accepted as is.
 */
export function validateInputEvent(
  registry: Registry,
  type: unknown,
  payload: unknown,
  maxBytes: number,
): MaybePromise<CheckedEvent> {
  const problem = eventTypeProblem(type)
  if (problem)
    throw new InvalidEventError(problem, { type: String(type).slice(0, MAX_EVENT_TYPE_LENGTH) })
  const name = type as string
  if (isRuntimeOwned(name)) {
    throw new InvalidEventError(
      `event type "${name}": runtime events are written only by the runtime (use cancel() to cancel)`,
      { type: name },
    )
  }
  const json = requireJson(payload, `event ${name} payload`, maxBytes, InvalidEventError)
  const input = registry.inputs.get(name)
  if (!input) {
    const owner = registry.ownerOf(name)
    if (!owner) return { type: name, payload: json }
    const internal = registry.events.has(name)
    throw new InvalidEventError(
      internal
        ? `event type "${name}" is internal to module "${owner.namespace}": only its kinds and effects write it`
        : notInCatalog(name, owner.namespace),
      { type: name, module: owner.namespace, ...(internal ? { internal: true } : {}) },
    )
  }
  return andThen(validPayload(input.payload, name, json, maxBytes), (checked) => ({
    type: name,
    payload: checked,
    input,
  }))
}

/** `json` as `schema` outputs it, still JSON within the limit (schemas may transform). */
const validPayload = (
  schema: StandardSchema,
  type: string,
  json: Json,
  maxBytes: number,
): MaybePromise<Json> =>
  andThen(validateWith(schema, json, `event ${type}`, InvalidEventError), (value) =>
    value === json
      ? json
      : requireJson(value, `event ${type} payload`, maxBytes, InvalidEventError),
  )

/**
 * An event a module writes: a kind's `emit` command, an effect's `ctx.emit`, a worker's callback
 * `events`. `emitter` is the writing module's namespace (none for an effect outside modules).
 * A name in the emitter's own catalog is local (`recorded` → `acme.recorded`); a full catalog
 * type also works (`scope: 'any-module'` lets kinds and in-process effects write other
 * modules' events, as a workflow's gate writes `approval.*`; a worker may write only its own
 * module's); a name without a dot outside the emitter's catalog is refused as a likely typo;
 * other types are application events. Every catalog event is validated by its schema.
 */
export function validateEmittedEvent(
  registry: Registry,
  emitter: string | undefined,
  type: unknown,
  payload: unknown,
  maxBytes: number,
  scope: 'any-module' | 'own-module',
): MaybePromise<{ type: string; payload: Json }> {
  const name = resolveEmitted(registry, emitter, type, scope)
  const json = requireJson(payload, `event ${name} payload`, maxBytes, InvalidEventError)
  const schema = registry.events.get(name)
  if (!schema) return { type: name, payload: json }
  return andThen(validPayload(schema, name, json, maxBytes), (checked) => ({
    type: name,
    payload: checked,
  }))
}

/** The full type an emitted name stands for; throws INVALID_EVENT when it may not be written. */
function resolveEmitted(
  registry: Registry,
  emitter: string | undefined,
  type: unknown,
  scope: 'any-module' | 'own-module',
): string {
  if (typeof type === 'string') {
    // The fast path: a local name, or a catalog type, costs a map lookup or two.
    const local = emitter === undefined ? undefined : registry.localEvent(emitter, type)
    if (local !== undefined) return local
    if (registry.events.has(type)) {
      if (scope === 'any-module' || ownerOf(type) === emitter) return type
      throw new InvalidEventError(
        `event type "${type}" belongs to module "${ownerOf(type)}": a worker of ${emitter ? `module "${emitter}"` : 'an effect outside modules'} may write only its own module's events and application events`,
        { type },
      )
    }
  }
  const problem = eventTypeProblem(type)
  if (problem)
    throw new InvalidEventError(problem, { type: String(type).slice(0, MAX_EVENT_TYPE_LENGTH) })
  const name = type as string
  if (isRuntimeOwned(name)) {
    throw new InvalidEventError(`event type "${name}": modules cannot emit runtime events`, {
      type: name,
    })
  }
  const owner = registry.ownerOf(name)
  if (owner) {
    throw new InvalidEventError(notInCatalog(name, owner.namespace), {
      type: name,
      module: owner.namespace,
    })
  }
  if (emitter !== undefined && !name.includes('.')) {
    throw new InvalidEventError(
      `event "${name}" is not in the catalog of module "${emitter}" (a name without a dot is a local name); an application event needs a dotted type such as app.${name}`,
      { type: name, module: emitter },
    )
  }
  return name
}

const notInCatalog = (type: string, namespace: string): string =>
  type.startsWith(`${namespace}.`)
    ? `event type "${type}" is not in the catalog of module "${namespace}"`
    : `event type "${type}" is in the namespace of module "${namespace}" (types are case-sensitive) and not in its catalog`

/** Events one signal may carry: a signal is one append, so it is bounded like one. */
export const MAX_EVENTS_PER_SIGNAL = 1000

const EVENT_INPUT_FIELDS = new Set(['type', 'payload', 'threadId'])

/**
 * The one validation of a signal's events, for every entry (embed `signal`, `POST
 * /runs/:id/events`, hosts to come), before anything is written: 1 to 1,000 objects with only
 * `type`, `payload` and `threadId`; each type and payload as `validateInputEvent` checks them;
 * a `threadId` a string (the run must have that thread: checked in its queue).
 */
export async function validateSignalEvents(
  registry: Registry,
  events: unknown,
  maxBytes: number,
): Promise<CheckedEvent[]> {
  if (!Array.isArray(events) || events.length === 0 || events.length > MAX_EVENTS_PER_SIGNAL) {
    throw new InvalidEventError(
      `a signal takes an array of 1 to ${MAX_EVENTS_PER_SIGNAL} events { type, payload?, threadId? }`,
      Array.isArray(events) ? { events: events.length, limit: MAX_EVENTS_PER_SIGNAL } : undefined,
    )
  }
  const out: CheckedEvent[] = []
  for (const [index, event] of (events as unknown[]).entries()) {
    if (typeof event !== 'object' || event === null || Array.isArray(event)) {
      throw new InvalidEventError(
        `events[${index}] must be an object { type, payload?, threadId? }`,
      )
    }
    const unknown = Object.keys(event).filter((key) => !EVENT_INPUT_FIELDS.has(key))
    if (unknown.length > 0) {
      throw new InvalidEventError(
        `events[${index}] has unknown field(s) ${unknown.join(', ')}: an event is { type, payload?, threadId? }`,
        { index, unknown },
      )
    }
    const { type, payload, threadId } = event as EventInput
    if (threadId !== undefined && typeof threadId !== 'string') {
      throw new InvalidEventError(`events[${index}].threadId must be a string`)
    }
    const checked = await validateInputEvent(registry, type, payload ?? null, maxBytes)
    if (threadId !== undefined) checked.threadId = threadId
    out.push(checked)
  }
  return out
}

/** The longest idempotency key (start and signal, body or header). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 256

// biome-ignore lint/suspicious/noControlCharactersInRegex: keys must be printable
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/

/**
 * The one rule for idempotency keys, wherever they come from: 1 to 256 characters, none of
 * them a control character (keys end up in logs, headers and store indexes).
 */
export function checkIdempotencyKey(value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_IDEMPOTENCY_KEY_LENGTH ||
    CONTROL_CHARACTER.test(value)
  ) {
    throw new InvalidRequestError(
      `idempotencyKey must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters, none of them a control character`,
    )
  }
  return value
}

const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/

/** `wait` of start and signal. */
export function checkWait(value: unknown): WaitFor {
  if (value === undefined) return 'quick'
  if (value === 'quick' || value === 'settled') return value
  throw new InvalidRequestError(
    `wait must be 'quick' (the default: resolve once the work that finishes at once is recorded) or 'settled' (resolve once the run is finished, or parked with nothing in flight), got ${JSON.stringify(value)}`,
  )
}

/**
 * A run's `timeoutMs` (a start's, else its definition's): a positive integer of ms, at most
 * about 285 years (`MAX_SAFE_INTEGER` / 1,000), or absent.
 */
export function checkRunTimeout(value: unknown, where: string): number | undefined {
  if (value === undefined) return undefined
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value <= 0 ||
    value > MAX_RUN_TIMEOUT
  ) {
    throw new InvalidRequestError(
      `${where}: timeoutMs must be a positive integer of milliseconds (at most ${MAX_RUN_TIMEOUT}), got ${JSON.stringify(value)}`,
    )
  }
  return value
}
const MAX_RUN_TIMEOUT = 9_007_199_254_740

/** A caller-given run or thread id (generated ids have this form too). */
export function checkId(value: unknown, name: string): void {
  if (typeof value !== 'string' || !RUN_ID.test(value)) {
    throw new InvalidInputError(
      `${name} must be 1-200 characters of letters, digits, '.', '_', ':' or '-', starting with a letter or digit`,
    )
  }
}

/** The longest error message recorded; a longer one is cut and says how much was left out. */
export const MAX_ERROR_MESSAGE = 4096

/**
 * An error as the log may hold it. Errors come from handlers, kinds and workers, so they are
 * checked like payloads, but a failure is never refused for its error: a long message is cut,
 * and details that are not JSON, or take more than half of `maxBytes`, are replaced by a note
 * saying why.
 */
export function recordableError(error: ErrorInfo, maxBytes: number): ErrorInfo {
  const code =
    typeof error?.code === 'string' && error.code.length > 0 ? error.code.slice(0, 200) : 'ERROR'
  let message = typeof error?.message === 'string' ? error.message : String(error?.message ?? '')
  if (message.length > MAX_ERROR_MESSAGE) {
    const left = message.length - MAX_ERROR_MESSAGE
    message = `${message.slice(0, MAX_ERROR_MESSAGE)}… (${left} more characters)`
  }
  const out: ErrorInfo = { code, message }
  if (error?.details === undefined) return out
  const budget = Math.floor(maxBytes / 2)
  const checked = jsonWithin(error.details, budget)
  if (checked.ok) out.details = checked.value
  else if ('problem' in checked) {
    const { message: why, path } = checked.problem
    out.details = { dropped: `details are not JSON: ${why} at ${path}` }
  } else {
    out.details = {
      dropped: `details are ${checked.bytes} bytes, over half of limits.maxEventBytes`,
    }
  }
  return out
}
