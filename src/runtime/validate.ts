import { withProps } from '../core/copy.js'
import type { EventInput } from '../core/envelope.js'
import {
  type ErrorInfo,
  InvalidEventError,
  InvalidInputError,
  type SkeinError,
} from '../core/errors.js'
import { checkJson, type Json, type JsonProblem, jsonByteLength } from '../core/json.js'
import type { Registry } from '../core/registry.js'
import { RUNTIME_PREFIX } from '../core/runtime-events.js'
import { formatIssues, type StandardSchema } from '../core/schema.js'

type ErrorClass = new (message: string, details?: Json) => SkeinError

/** What may be a value or a promise of one: validation stays synchronous when schemas are. */
export type MaybePromise<T> = T | Promise<T>

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
  throw new errorClass(`${what}: ${checked.bytes} bytes is over the limit of ${maxBytes}`, {
    bytes: checked.bytes,
    limit: maxBytes,
  })
}

/**
 * Validates a module event (signal or emit): `runtime.*` is refused from outside; a type in a
 * registered module's namespace must be in its catalog and match its schema; other types are
 * accepted as application events.
 */
export function validateModuleEvent(
  registry: Registry,
  type: unknown,
  payload: unknown,
  maxBytes: number,
  origin: 'external' | 'module',
): MaybePromise<{ type: string; payload: Json }> {
  if (typeof type !== 'string' || type.length === 0 || type.length > 200) {
    throw new InvalidEventError('event type must be a non-empty string of at most 200 characters')
  }
  if (type.startsWith(RUNTIME_PREFIX)) {
    throw new InvalidEventError(
      origin === 'external'
        ? `event type "${type}": runtime.* events are written only by the runtime (use cancel() to cancel)`
        : `event type "${type}": modules cannot emit runtime.* events`,
      { type },
    )
  }
  const json = requireJson(payload, `event ${type} payload`, maxBytes, InvalidEventError)
  const mod = registry.moduleOf(type)
  if (!mod) return { type, payload: json }
  const schema = registry.events.get(type)
  if (!schema) {
    throw new InvalidEventError(
      `event type "${type}" is not in the catalog of module "${mod.namespace}"`,
      { type, module: mod.namespace },
    )
  }
  return andThen(validateWith(schema, json, `event ${type}`, InvalidEventError), (value) =>
    value === json
      ? { type, payload: json }
      : { type, payload: requireJson(value, `event ${type} payload`, maxBytes, InvalidEventError) },
  )
}

export async function validateSignalEvents(
  registry: Registry,
  events: readonly EventInput[],
  maxBytes: number,
): Promise<Array<{ type: string; payload: Json; threadId?: string }>> {
  if (!Array.isArray(events) || events.length === 0) {
    throw new InvalidEventError('signal needs a non-empty array of events')
  }
  const out: Array<{ type: string; payload: Json; threadId?: string }> = []
  for (const [index, event] of events.entries()) {
    if (typeof event !== 'object' || event === null) {
      throw new InvalidEventError(
        `events[${index}] must be an object { type, payload?, threadId? }`,
      )
    }
    if (event.threadId !== undefined && typeof event.threadId !== 'string') {
      throw new InvalidEventError(`events[${index}].threadId must be a string`)
    }
    const checked = await validateModuleEvent(
      registry,
      event.type,
      event.payload ?? null,
      maxBytes,
      'external',
    )
    out.push(
      event.threadId === undefined ? checked : withProps(checked, { threadId: event.threadId }),
    )
  }
  return out
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
