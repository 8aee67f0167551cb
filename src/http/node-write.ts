import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import { wireBodyOf } from './wire-body.js'

/**
 * Writes a handler's Response to the Node response itself when Skein built it and knows its
 * bytes (a `jsonResponse`), skipping the Node adapter's read of the Web body stream. Returns
 * false for any other Response, which the adapter then writes as usual. Status and headers
 * are read from the Response now, so changes made to it after the route built it still count.
 */
export function writeDirect(response: Response, outgoing: ServerResponse): boolean {
  const text = wireBodyOf(response)
  if (text === undefined) return false
  const headers = nodeHeaders(response.headers)
  headers['content-length'] = Buffer.byteLength(text)
  outgoing.writeHead(response.status, headers)
  outgoing.end(text)
  return true
}

/** Web headers as Node's header object; several Set-Cookie values stay separate lines. */
function nodeHeaders(headers: Headers): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {}
  for (const [name, value] of headers) out[name] = value
  if (out['set-cookie'] !== undefined) out['set-cookie'] = headers.getSetCookie()
  return out
}
