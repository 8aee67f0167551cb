import type { AuthorizeHook } from './http/authorize.js'
import type { DebuggerHost, HttpOptions } from './http/http-options.js'
import type { ServeOptions } from './runtime/engine-types.js'
import type { RuntimeOptions } from './runtime/options.js'

/**
 * The options of `createEngine` (docs/engine.md): the
 * runtime's (`RuntimeOptions`: modules, store, limits, worker, …) and those of the HTTP layer
 * and the server, which the runtime never reads.
 */
export interface EngineOptions extends RuntimeOptions {
  /** Start the HTTP server at creation: `true` or `{ port, hostname, … }`. */
  serve?: boolean | ServeOptions
  /** Authorizes every HTTP request, streams and the debugger included (docs/http.md). */
  authorize?: AuthorizeHook
  /** A debugger UI served under `basePath` (`skein/debugger`). */
  debugger?: DebuggerHost
  /** The API's base path and the bounds of live streams. */
  http?: HttpOptions
}
