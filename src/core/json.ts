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
  // One walker for every call; a call made from inside a walk (a getter that starts a run)
  // gets its own.
  const walker = spare ?? newWalker()
  spare = undefined
  walker.maxDepth = maxDepth
  const out = walk(walker, value)
  const problem = walker.problem
  const bound = walker.bound
  walker.problem = undefined
  walker.bound = 0
  // Every walk pops what it pushed, so the stacks come back empty (a throwing getter leaves
  // them behind, but then the walker is not kept).
  spare = walker
  return problem ? { ok: false, problem } : { ok: true, value: out as Json, maxBytes: bound }
}

const newWalker = (): Walker => ({
  problem: undefined,
  bound: 0,
  keys: [],
  ancestors: [],
  maxDepth: MAX_DEPTH,
})
let spare: Walker | undefined = newWalker()

interface Walker {
  problem: JsonProblem | undefined
  /**
   * An upper bound of the JSON text's UTF-8 size (6 bytes per char covers \uXXXX escapes; 24
   * per scalar covers any number), so callers can skip serialising small values.
   */
  bound: number
  /** The path to the current value, turned into a string only for a problem. */
  keys: Array<string | number>
  ancestors: object[]
  maxDepth: number
}

const fail = (w: Walker, message: string): void => {
  let path = '$'
  for (const key of w.keys) path += typeof key === 'number' ? `[${key}]` : `.${key}`
  w.problem = { path, message }
}

function walk(w: Walker, value: unknown): unknown {
  if (w.problem) return value
  w.bound += 24
  if (value === null) return value
  switch (typeof value) {
    case 'string':
      w.bound += value.length * 6
      return value
    case 'boolean':
      return value
    case 'number':
      if (!Number.isFinite(value)) fail(w, 'non-finite number')
      return value
    case 'object':
      break
    default:
      fail(w, `${typeof value} is not JSON`)
      return value
  }
  const obj = value as object
  if (w.ancestors.length >= w.maxDepth) {
    fail(w, w.ancestors.includes(obj) ? 'cyclic value' : `nesting deeper than ${w.maxDepth}`)
    return value
  }
  if (w.ancestors.includes(obj)) {
    fail(w, 'cyclic value')
    return value
  }
  w.ancestors.push(obj)
  const out = Array.isArray(obj) ? walkArray(w, obj) : walkObject(w, obj)
  w.ancestors.pop()
  return out
}

function walkArray(w: Walker, arr: unknown[]): unknown {
  let copy: unknown[] | undefined
  for (let i = 0; i < arr.length; i++) {
    const item = arr[i]
    w.keys.push(i)
    if (item === undefined) {
      fail(w, 'undefined is not JSON')
      w.keys.pop()
      break
    }
    const next = walk(w, item)
    w.keys.pop()
    if (next !== item) {
      copy ??= arr.slice()
      copy[i] = next
    }
  }
  return copy ?? arr
}

function walkObject(w: Walker, obj: object): unknown {
  const proto = Object.getPrototypeOf(obj)
  if (proto !== Object.prototype && proto !== null) {
    fail(w, `${proto?.constructor?.name ?? 'object'} is not plain JSON`)
    return obj
  }
  let copy: Record<string, unknown> | undefined
  const record = obj as Record<string, unknown>
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue
    w.bound += key.length * 6 + 4
    const item = record[key]
    if (item === undefined) {
      copy ??= { ...record }
      delete copy[key]
      continue
    }
    w.keys.push(key)
    const next = walk(w, item)
    w.keys.pop()
    if (next !== item) {
      copy ??= { ...record }
      copy[key] = next
    }
  }
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
