import type { RecordedKey } from '../../core/ports.js'

/** Keys in the order every store lists them: by seq, then by key. */
export function sortKeys(keys: RecordedKey[]): RecordedKey[] {
  return keys.sort((a, b) => a.seq - b.seq || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
}
