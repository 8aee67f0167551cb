/** JSON values: what the log stores. Anything else is rejected before a write. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
export type JsonObject = { [key: string]: Json }

export const MAX_DEPTH = 64

export interface JsonProblem {
  path: string
  message: string
}

/**
 * Checks that `value` is plain JSON (no functions, symbols, bigints, non-finite numbers,
 * class instances, cycles) nested at most `maxDepth` deep. `undefined` object properties
 * are allowed and stripped (the returned value is a cleaned copy only when needed), so the
 * memory store and a serialising store fold to the same state.
 */
export function checkJson(
  value: unknown,
  maxDepth = MAX_DEPTH,
): { ok: true; value: Json; maxBytes: number } | { ok: false; problem: JsonProblem } {
  const problem = { current: undefined as JsonProblem | undefined, bound: 0 }
  const out = walk(value, 0, '$', maxDepth, problem, new Set())
  return problem.current
    ? { ok: false, problem: problem.current }
    : { ok: true, value: out as Json, maxBytes: problem.bound }
}

function walk(
  value: unknown,
  depth: number,
  path: string,
  maxDepth: number,
  problem: { current: JsonProblem | undefined; bound: number },
  seen: Set<object>,
): unknown {
  if (problem.current) return value
  // `bound` is an upper bound of the JSON text's UTF-8 size (6 bytes per char covers \uXXXX
  // escapes; 24 per scalar covers any number), so callers can skip serialising small values.
  problem.bound += 24
  if (value === null) return value
  switch (typeof value) {
    case 'string':
      problem.bound += value.length * 6
      return value
    case 'boolean':
      return value
    case 'number':
      if (!Number.isFinite(value)) problem.current = { path, message: 'non-finite number' }
      return value
    case 'object':
      break
    default:
      problem.current = { path, message: `${typeof value} is not JSON` }
      return value
  }
  if (depth >= maxDepth) {
    problem.current = { path, message: `nesting deeper than ${maxDepth}` }
    return value
  }
  const obj = value as object
  if (seen.has(obj)) {
    problem.current = { path, message: 'cyclic value' }
    return value
  }
  seen.add(obj)
  if (Array.isArray(obj)) {
    let copy: unknown[] | undefined
    for (let i = 0; i < obj.length; i++) {
      const item = obj[i]
      if (item === undefined) {
        problem.current = { path: `${path}[${i}]`, message: 'undefined is not JSON' }
        break
      }
      const next = walk(item, depth + 1, `${path}[${i}]`, maxDepth, problem, seen)
      if (next !== item) {
        copy ??= obj.slice()
        copy[i] = next
      }
    }
    seen.delete(obj)
    return copy ?? obj
  }
  const proto = Object.getPrototypeOf(obj)
  if (proto !== Object.prototype && proto !== null) {
    problem.current = { path, message: `${proto?.constructor?.name ?? 'object'} is not plain JSON` }
    return value
  }
  let copy: Record<string, unknown> | undefined
  for (const key of Object.keys(obj)) {
    problem.bound += key.length * 6 + 4
    const item = (obj as Record<string, unknown>)[key]
    if (item === undefined) {
      copy ??= { ...(obj as Record<string, unknown>) }
      delete copy[key]
      continue
    }
    const next = walk(item, depth + 1, `${path}.${key}`, maxDepth, problem, seen)
    if (next !== item) {
      copy ??= { ...(obj as Record<string, unknown>) }
      copy[key] = next
    }
  }
  seen.delete(obj)
  return copy ?? obj
}

/** UTF-8 byte length of the JSON text of `value`, without allocating a Buffer. */
export function jsonByteLength(value: Json): number {
  const text = JSON.stringify(value)
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code >= 0x80) bytes += code >= 0x800 ? (code >= 0xd800 && code <= 0xdfff ? 1 : 2) : 1
  }
  return bytes
}

/** JSON text with object keys sorted: equal for values that differ only in key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  const keys = Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`
}

/** True when every key of `subset` is in `value` with an equal (recursively subset) value. */
export function isSubset(subset: Json | undefined, value: Json | undefined): boolean {
  if (subset === undefined) return true
  if (subset === null || typeof subset !== 'object') return subset === value
  if (value === null || typeof value !== 'object') return false
  if (Array.isArray(subset)) {
    if (!Array.isArray(value) || value.length !== subset.length) return false
    return subset.every((item, i) => isSubset(item, value[i]))
  }
  if (Array.isArray(value)) return false
  for (const key of Object.keys(subset)) {
    if (!Object.hasOwn(value, key)) return false
    if (!isSubset(subset[key], value[key])) return false
  }
  return true
}

/** Deep copy of a JSON value (for snapshots of mutable cursors). */
export function cloneJson<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T)
}
