import { InvalidRequestError } from '../core/errors.js'
import type { Json, JsonObject } from '../core/json.js'
import { checkIdempotencyKey } from '../runtime/validate.js'

/** Bounds on identifiers taken from bodies and headers (they end up as store keys). */
const MAX_ID_LENGTH = 256

/** The body must be an object with no keys outside `allowed` (a typo is a 400, not a no-op). */
export function expectObject(value: Json, allowed: readonly string[], what = 'body'): JsonObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidRequestError(`${what} must be a JSON object`)
  }
  const unknown = Object.keys(value).filter((key) => !allowed.includes(key))
  if (unknown.length > 0) {
    throw new InvalidRequestError(`${what} has unknown field(s): ${unknown.join(', ')}`, {
      unknown,
      allowed: [...allowed],
    })
  }
  return value
}

export function requiredString(body: JsonObject, key: string, what = 'body'): string {
  const value = body[key]
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidRequestError(`${what}.${key} must be a non-empty string`, { field: key })
  }
  return value
}

export function optionalString(body: JsonObject, key: string, what = 'body'): string | undefined {
  if (body[key] === undefined) return undefined
  return requiredString(body, key, what)
}

/** An identifier (runId, threadId, idempotency key): non-empty, bounded, no control chars. */
export function optionalId(body: JsonObject, key: string, what = 'body'): string | undefined {
  const value = optionalString(body, key, what)
  if (value !== undefined) checkId(value, `${what}.${key}`)
  return value
}

export function checkId(value: string, what: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: identifiers must be printable
  if (value.length > MAX_ID_LENGTH || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new InvalidRequestError(`${what} must be at most ${MAX_ID_LENGTH} printable characters`, {
      field: what,
    })
  }
  return value
}

/**
 * The request's idempotency key: `idempotencyKey` in the body or the `Idempotency-Key` header.
 * The header must come once: repeated headers reach the handler joined by commas, so a header
 * key may not contain one. Both given and different is a 400. The key itself meets the rule of
 * every key, embed calls' too (`checkIdempotencyKey`).
 */
export function idempotencyKeyOf(request: Request, fromBody: string | undefined) {
  const header = request.headers.get('idempotency-key')
  if (header === null) return fromBody === undefined ? undefined : checkIdempotencyKey(fromBody)
  if (header.length === 0) throw new InvalidRequestError('Idempotency-Key header is empty')
  if (header.includes(',')) {
    throw new InvalidRequestError(
      'Idempotency-Key must be one header holding one key without commas (repeated headers arrive joined by commas)',
    )
  }
  if (fromBody !== undefined && fromBody !== header) {
    throw new InvalidRequestError('body.idempotencyKey and the Idempotency-Key header differ')
  }
  return checkIdempotencyKey(header)
}

/** Refuses query parameters the route does not declare, naming each once. */
export function checkQuery(url: URL, allowed: readonly string[] = []): void {
  const unknown = new Set<string>()
  for (const name of url.searchParams.keys()) if (!allowed.includes(name)) unknown.add(name)
  if (unknown.size === 0) return
  const names = [...unknown]
  const accepts = allowed.length === 0 ? 'none' : allowed.join(', ')
  throw new InvalidRequestError(
    `unknown query parameter(s): ${names.join(', ')} (this route accepts: ${accepts})`,
    { unknown: names, allowed: [...allowed] },
  )
}

/**
 * A non-negative integer query parameter. Repeated, empty, signed, fractional or
 * exponent forms are a 400: `?fromSeq=1e3` must not silently mean something.
 */
export function intQuery(url: URL, name: string, min = 0): number | undefined {
  const all = url.searchParams.getAll(name)
  if (all.length === 0) return undefined
  if (all.length > 1) throw new InvalidRequestError(`query parameter ${name} is repeated`)
  return parseCursor(all[0], `query parameter ${name}`, min)
}

export function parseCursor(text: string, what: string, min = 0): number {
  const value = Number(text)
  if (!/^\d{1,15}$/.test(text) || value < min) {
    throw new InvalidRequestError(`${what} must be an integer >= ${min}`, { value: text })
  }
  return value
}

/** `?name=true` is true, `?name=false` or none false; anything else is a 400. */
export function queryFlag(url: URL, name: string): boolean {
  const all = url.searchParams.getAll(name)
  if (all.length === 0) return false
  if (all.length === 1 && (all[0] === 'true' || all[0] === 'false')) return all[0] === 'true'
  throw new InvalidRequestError(`query parameter ${name} must be "true" or "false"`)
}
