import type { Definition } from '../core/definition.js'
import type { SseOptions } from './sse-limits.js'

// The HTTP layer's options of `createEngine` (`http`, `debugger`; `authorize` is in
// authorize.ts), gathered with the runtime's into `EngineOptions` (src/engine-options.ts).

/** The HTTP API's options (`createEngine({ http })`). */
export interface HttpOptions {
  /**
   * Serve the API under this path (e.g. `/skein`: `GET /skein/runs/:id`); paths outside it are
   * left to the host app (`fetch` returns null). Default: at the root.
   */
  basePath?: string
  sse?: SseOptions
  /**
   * Serve cancellation over HTTP (docs/operating-runs.md, "Cancelling over HTTP"):
   * `POST /runs/:id/cancel` and `POST /operations/runs/cancel`, under operations access.
   * Default false: cancellation is an embed method, and those routes answer 503 NOT_CONFIGURED.
   */
  cancelRoutes?: boolean
}

/** What a debugger UI's `fetch` receives beside the request. */
export interface DebuggerContext {
  basePath: string
  /** The engine's registered definitions (a UI draws workflow graphs from them). */
  definitions?: () => Promise<readonly Definition[]>
  /**
   * What the host serves: `cancel`, the opt-in cancel routes; `operations`, whether operations
   * routes can be opened at all (false without an authorize hook: they answer NOT_CONFIGURED).
   */
  capabilities?: { cancel: boolean; operations?: boolean }
}

export interface DebuggerHost {
  basePath: string
  ui: { fetch(request: Request, context: DebuggerContext): Response | Promise<Response> }
}
