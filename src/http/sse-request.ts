import { InvalidRequestError } from '../core/errors.js'
import { SSE_CONTENT_TYPE } from './wire/sse-format.js'

/** `Accept: text/event-stream` (any position in the list) asks for a live stream. */
export const wantsEventStream = (request: Request): boolean =>
  (request.headers.get('accept') ?? '').toLowerCase().includes(SSE_CONTENT_TYPE)

/** `?live=true` asks for a stream, `?live=false` or none does not; anything else is a 400. */
export function liveFlag(url: URL): boolean {
  const all = url.searchParams.getAll('live')
  if (all.length === 0) return false
  if (all.length === 1 && (all[0] === 'true' || all[0] === 'false')) return all[0] === 'true'
  throw new InvalidRequestError('query parameter live must be "true" or "false"')
}
