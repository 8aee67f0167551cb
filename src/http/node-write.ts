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
 * An SSE stream written to the socket. Backpressure as on the Web path: once a write finds
 * the socket's buffer full, frames written before it drains count as the backlog the stream
 * bounds (`maxBufferedEvents`); catch-up waits for the drain before reading the next page.
 */
function pipeFrames(tap: FrameTap, outgoing: ServerResponse): void {
  let full = false
  let backlog = 0
  let resume: (() => void) | undefined
  const open = () => !outgoing.destroyed && !outgoing.writableEnded
  outgoing.on('drain', () => {
    full = false
    backlog = 0
    resume?.()
  })
  // A client that goes away, or a socket the server destroys, ends the stream.
  outgoing.once('close', () => {
    tap.cancel()
    resume?.()
  })
  tap.attach({
    write(frame) {
      if (!open()) return
      if (full) backlog++
      if (!outgoing.write(frame)) full = true
    },
    backlog: () => backlog,
    end() {
      if (open()) outgoing.end()
    },
  })
  // The client may have gone while the route ran: 'close' has fired already and won't again.
  if (outgoing.destroyed) return tap.cancel()
  const { pull } = tap
  if (!pull) return
  void (async () => {
    try {
      while (open() && (await pull())) {
        if (full && open()) await new Promise<void>((resolve) => (resume = resolve))
        resume = undefined
      }
    } catch {
      tap.cancel()
    }
  })()
}

/** Web headers as Node's header object; several Set-Cookie values stay separate lines. */
function nodeHeaders(headers: Headers): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {}
  for (const [name, value] of headers) out[name] = value
  if (out['set-cookie'] !== undefined) out['set-cookie'] = headers.getSetCookie()
  return out
}
