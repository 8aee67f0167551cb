import { InvalidRequestError } from '../core/errors.js'

/** Which event types a reader wants: `true` for the ones to send. */
export type TypeFilter = (type: string) => boolean

const MAX_ENTRIES = 50
const MAX_ENTRY_LENGTH = 256
// A type, or a prefix of dot-separated segments followed by `.*`. No spaces, commas or stars
// elsewhere: `workflow.*` matches `workflow.node.finished`, `workflow` alone matches only itself.
const ENTRY = /^[^\s,*]+(\.\*)?$/

/**
 * The `types` query parameter (`?types=approval.requested,workflow.*`), or undefined when absent.
 * Entries are exact types or `prefix.*`; an empty, repeated or malformed value is a 400.
 *
 * @example parseTypeFilter(new URL('http://x/?types=workflow.*'))!('workflow.node.started') // true
 */
export function parseTypeFilter(url: URL): TypeFilter | undefined {
  const all = url.searchParams.getAll('types')
  if (all.length === 0) return undefined
  if (all.length > 1) throw new InvalidRequestError('query parameter types is repeated')
  const entries = all[0].split(',')
  const bad = entries.find((entry) => entry.length > MAX_ENTRY_LENGTH || !ENTRY.test(entry))
  if (bad !== undefined || entries.length > MAX_ENTRIES) {
    throw new InvalidRequestError(
      `query parameter types must be 1 to ${MAX_ENTRIES} comma-separated event types or prefixes ending in ".*" (e.g. types=approval.requested,workflow.*)`,
      { value: all[0].slice(0, 300) },
    )
  }
  const exact = new Set(entries.filter((entry) => !entry.endsWith('.*')))
  const prefixes = entries
    .filter((entry) => entry.endsWith('.*'))
    .map((entry) => entry.slice(0, -1))
  return (type) => exact.has(type) || prefixes.some((prefix) => type.startsWith(prefix))
}
