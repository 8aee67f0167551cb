import { queryFlag } from './validate.js'
import { SSE_CONTENT_TYPE } from './wire/sse-format.js'

/** `Accept: text/event-stream` (any position in the list) asks for a live stream. */
export const wantsEventStream = (request: Request): boolean =>
  (request.headers.get('accept') ?? '').toLowerCase().includes(SSE_CONTENT_TYPE)

/** `?live=true` asks for a stream, `?live=false` or none does not; anything else is a 400. */
export const liveFlag = (url: URL): boolean => queryFlag(url, 'live')
