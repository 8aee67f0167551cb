import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import { claimFrameTap, type FrameTap } from './frame-stream.js'
import { wireBodyOf } from './wire-body.js'

/**
 * Writes a handler's Response to the Node response itself when Skein built it and knows its
 * bytes, skipping the Node adapter's read of the Web body stream: a `jsonResponse` is written
 * from its text, an SSE stream frame by frame. Returns false for any other Response (or one
 * whose body was read), which the adapter then writes as usual. Status and headers are read
 * from the Response now, so changes made to it after the route built it still count.
 */
export function writeDirect(response: Response, outgoing: ServerResponse): boolean {
  const text = wireBodyOf(response)
  if (text !== undefined) {
    const headers = nodeHeaders(response.headers)
    headers['content-length'] = Buffer.byteLength(text)
    outgoing.writeHead(response.status, headers)
    outgoing.end(text)
    return true
  }
  if (response.body === null || response.body.locked) return false
  const tap = claimFrameTap(response)
  if (!tap) return false
  outgoing.writeHead(response.status, nodeHeaders(response.headers))
  pipeFrames(tap, outgoing)
  return true
}

/**
 * An SSE stream written to the socket. Backpressure as on the Web path: a write that finds the
 * socket's buffer full leaves the stream behind, frames written before the buffer drains count
 * as its backlog, `writableLength` is the memory it holds, and 'drain' tells the stream it may
 * write its next catch-up page.
 */
function pipeFrames(tap: FrameTap, outgoing: ServerResponse): void {
  let full = false
  let backlog = 0
  const open = () => !outgoing.destroyed && !outgoing.writableEnded
  outgoing.on('drain', () => {
    full = false
    backlog = 0
    tap.drained()
  })
  // A client that goes away, or a socket the server destroys, ends the stream.
  outgoing.once('close', () => tap.cancel())
  tap.attach({
    write(frame) {
      if (!open()) return true
      if (full) backlog++
      if (!outgoing.write(frame)) full = true
      return !full
    },
    backlog: () => backlog,
    bufferedBytes: () => (outgoing.destroyed ? 0 : outgoing.writableLength),
    end() {
      if (open()) outgoing.end()
    },
    destroy() {
      outgoing.destroy()
    },
  })
  // The client may have gone while the route ran: 'close' has fired already and won't again.
  if (outgoing.destroyed) return tap.cancel()
  tap.start()
}

/** Web headers as Node's header object; several Set-Cookie values stay separate lines. */
function nodeHeaders(headers: Headers): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {}
  for (const [name, value] of headers) out[name] = value
  if (out['set-cookie'] !== undefined) out['set-cookie'] = headers.getSetCookie()
  return out
}
