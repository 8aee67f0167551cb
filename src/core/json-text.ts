import type { Json } from './json.js'

/**
 * The JSON text of values whose producer wrote it as it built them (the codec store's sealed
 * payloads: decisions.md, "A sealed payload carries its JSON text to the store"), by identity.
 * A store serializing a payload asks `jsonTextOf` instead of `JSON.stringify`, so a sealed
 * payload's base64 is not scanned for escapes a second time. Weak: an entry lives as long as
 * its value. A value given a text is never changed afterwards (the codec store builds it for
 * the store alone).
 */
const texts = new WeakMap<object, string>()

/** `value`, known from now on to serialize as `text` (which must be `JSON.stringify(value)`). */
export function withJsonText<T extends object>(value: T, text: string): T {
  texts.set(value, text)
  return value
}

/** `JSON.stringify(value)`, or the text its producer gave it (`withJsonText`). */
export function jsonTextOf(value: Json): string {
  return (typeof value === 'object' && value !== null && texts.get(value)) || JSON.stringify(value)
}
