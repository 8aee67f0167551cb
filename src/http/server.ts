import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ServeOptions, ServerHandle } from '../runtime/engine-types.js'
import { errorResponse, httpError } from './error-response.js'
import { createNodeListener } from './node-listener.js'

export interface ServeHandlerOptions extends ServeOptions {
  /** Ends open SSE streams on close (the handler's `closeStreams`). */
  closeStreams?: () => void
}

/** Defaults of the request timeouts (docs/http.md, "Server timeouts"). */
export const SERVER_TIMEOUTS = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 }

/**
 * Node's options for how long a request may take to arrive: its headers, and all of it (a body
 * shorter than its Content-Length is answered 408 and closed, not held until the client gives
 * up). Neither bounds how long answering takes (an SSE stream, a long-poll). Node checks open
 * connections every `connectionsCheckingInterval` (30 s by default), so that follows the
 * timeouts to keep them close to what is asked.
 */
function timeoutOptions(options: ServeOptions) {
  const headersTimeout = options.headersTimeoutMs ?? SERVER_TIMEOUTS.headersTimeoutMs
  const requestTimeout = options.requestTimeoutMs ?? SERVER_TIMEOUTS.requestTimeoutMs
  for (const [name, value] of [
    ['headersTimeoutMs', headersTimeout],
    ['requestTimeoutMs', requestTimeout],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new TypeError(`serve: ${name} must be a positive integer, got ${String(value)}`)
    }
  }
  if (headersTimeout > requestTimeout) {
    throw new TypeError(
      `serve: headersTimeoutMs (${headersTimeout}) must not be longer than requestTimeoutMs (${requestTimeout})`,
    )
  }
  const connectionsCheckingInterval = Math.max(10, Math.min(1000, Math.floor(headersTimeout / 4)))
  return { headersTimeout, requestTimeout, connectionsCheckingInterval }
}

/**
 * A thin Node server over a Web handler: `null` becomes a JSON 404, requests the
 * adapter cannot even build (bad Host, backslash paths) become a JSON 400. Skein's own JSON
 * bodies and SSE streams are written to the socket directly (node-listener.ts). Binds 127.0.0.1
 * unless told otherwise; port 0 picks a free port. `close()` ends SSE streams and drops idle
 * keep-alive sockets so it resolves promptly.
 *
 * @example
 * const server = await serveHandler(http.fetch, { port: 0, closeStreams: http.closeStreams })
 * console.log(server.url) // http://127.0.0.1:53211
 */
export async function serveHandler(
  fetch: (request: Request) => Promise<Response | null>,
  options: ServeHandlerOptions = {},
): Promise<ServerHandle> {
  const timeouts = timeoutOptions(options)
  const hostname = options.hostname ?? '127.0.0.1'
  const listener = createNodeListener(fetch, () =>
    errorResponse(httpError('NOT_FOUND', 'no route for this path')),
  )
  const server = createServer(timeouts, listener)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 8787, hostname, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  const host = hostname.includes(':') ? `[${hostname}]` : hostname
  let closing: Promise<void> | undefined
  return {
    url: `http://${host}:${port}`,
    port,
    hostname,
    close() {
      closing ??= new Promise<void>((resolve) => {
        options.closeStreams?.()
        server.close(() => resolve())
        server.closeIdleConnections()
        // Streams ended above flush their last bytes; anything still open after that is a
        // socket we must not wait on.
        setImmediate(() => server.closeAllConnections())
      })
      return closing
    },
  }
}
