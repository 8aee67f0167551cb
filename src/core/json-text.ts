import type { Json } from './json.js'

/**
 * The JSON text of a value whose producer wrote it as it built the value (the codec store's
 * sealed payloads: decisions.md, "A sealed payload carries its JSON text to the store"), kept
 * on the value under a symbol that is not enumerable, so no copy, comparison or serialization
 * sees it. A store serializing a payload asks `jsonTextOf` instead of `JSON.stringify`, so a
 * sealed payload's base64 is not scanned for escapes a second time. A value given a text is
 * never changed afterwards (the codec store builds it for the store alone). Not a WeakMap: its
 * table of short-lived entries cost more in each young-generation GC than the texts saved.
 */
const JSON_TEXT = Symbol('skein.jsonText')

/** `value`, known from now on to serialize as `text` (which must be `JSON.stringify(value)`). */
export function withJsonText<T extends object>(value: T, text: string): T {
  Object.defineProperty(value, JSON_TEXT, { value: text })
  return value
}

/** `JSON.stringify(value)`, or the text its producer gave it (`withJsonText`). */
export function jsonTextOf(value: Json): string {
  if (typeof value === 'object' && value !== null) {
    const text = (value as { [JSON_TEXT]?: string })[JSON_TEXT]
    if (text !== undefined) return text
  }
  return JSON.stringify(value)
}
