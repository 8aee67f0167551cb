import type { IncomingMessage, ServerResponse } from 'node:http'
import { createNodeListener } from './node-listener.js'

/**
 * What the middleware is handed: Node's `IncomingMessage` and `ServerResponse` (or a framework's
 * extension of them). Typed by the few members any such request and response have, so the
 * published declarations need no `@types/node` (a consumer's own Node types still fit).
 */
export interface NodeRequestLike {
  url?: string
  method?: string
  headers: Record<string, string | string[] | undefined>
}
export interface NodeResponseLike {
  statusCode: number
  end(): unknown
}

/** Express/Connect middleware: `(req, res, next)`. */
export type NodeMiddleware = (
  req: NodeRequestLike,
  res: NodeResponseLike,
  next?: (error?: unknown) => void,
) => void

/** What the middleware needs of an engine: its Web handler. */
export interface FetchHandler {
  fetch(request: Request): Promise<Response | null>
}

const API_BASE_PATH = Symbol.for('skein.apiBasePath')

/** Records the API's base path on an engine, for `toNodeMiddleware` (createEngine calls it). */
export function markApiBasePath(engine: object, basePath: string): void {
  Object.defineProperty(engine, API_BASE_PATH, { value: basePath })
}

/** The parts of Express's request the middleware reads (Connect and plain Node have none). */
interface FrameworkRequest extends IncomingMessage {
  originalUrl?: string
  body?: unknown
  rawBody?: unknown
  /** body-parser's flag: it read the body. */
  _body?: boolean
}

/**
 * Skein's HTTP API as Express or Connect middleware (or for any `(req, res, next)` server).
 * Requests for the API are answered; everything else goes to `next()`.
 *
 * Paths: without an `http.basePath` the API answers at the path the framework hands over, so
 * `app.use('/skein', toNodeMiddleware(engine))` serves it under `/skein`. With one, it answers
 * at the request's full path (`req.originalUrl`), wherever the middleware is mounted.
 *
 * Bodies: behind `express.json()` (or any parser that read the body and left `req.body`), the
 * parsed body is written back out as JSON and goes through Skein's own checks (media type, size,
 * nesting, forbidden keys), so the answers are the same as without the parser; a `rawBody`
 * Buffer a parser kept is used as it is.
 *
 * @example
 * const app = express()
 * app.use(express.json())
 * app.use('/skein', toNodeMiddleware(engine))
 */
export function toNodeMiddleware(engine: FetchHandler): NodeMiddleware {
  const basePath: string = (engine as { [API_BASE_PATH]?: string })[API_BASE_PATH] ?? ''
  const passOn = new WeakMap<IncomingMessage, () => void>()
  const listener = createNodeListener(
    (request) => engine.fetch(request),
    (incoming) => {
      passOn.get(incoming)?.()
      return undefined
    },
  )

  return (incoming, response, next) => {
    const req = incoming as FrameworkRequest
    const res = response as ServerResponse
    const url = req.url
    const adopted = adoptParsedBody(req)
    passOn.set(req, () => {
      // Leave the request as the framework had it for whoever answers instead.
      req.url = url
      if (adopted) delete req.rawBody
      if (next) next()
      else {
        res.statusCode = 404
        res.end()
      }
    })
    if (basePath && req.originalUrl !== undefined) req.url = req.originalUrl
    // The adapter reads the URL when it builds the Request, before its first await.
    const done = listener(req, res)
    req.url = url
    done.catch((error: unknown) => next?.(error))
  }
}

/** Gives the adapter the body a parser already read. Returns whether `rawBody` was set here. */
function adoptParsedBody(req: FrameworkRequest): boolean {
  if (Buffer.isBuffer(req.rawBody)) return false
  if (req.body === undefined || !(req._body === true || req.readableEnded)) return false
  const { body } = req
  try {
    req.rawBody = Buffer.isBuffer(body)
      ? body
      : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))
  } catch {
    return false
  }
  return true
}
