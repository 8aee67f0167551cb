import type { DebuggerContext } from '../http/http-options.js'
import { loadAssets } from './assets.js'
import { describeDefinitions } from './definitions.js'
import { renderPage } from './page.js'

export interface DebuggerUiOptions {
  /** The page title (default "Skein debugger"). */
  title?: string
  /**
   * Where the UI finds the HTTP API: `''` (default) for the same origin as the page, a path
   * prefix such as `/api` when the API is mounted under one, or another origin's URL.
   */
  apiBase?: string
}

export interface DebuggerUi {
  fetch(request: Request, context: DebuggerContext): Promise<Response>
}

/** Hashed asset URLs never change content: cached for a year without revalidation. */
const IMMUTABLE = 'public, max-age=31536000, immutable'

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
}

const text = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(body, {
    status,
    headers: {
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
      ...SECURITY_HEADERS,
      ...headers,
    },
  })

const json = (value: unknown) =>
  new Response(JSON.stringify(value), {
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-cache',
      ...SECURITY_HEADERS,
    },
  })

/**
 * The web debugger: a UI provider for `createEngine({ debugger: { basePath, ui } })`. It serves
 * one page and its scripts, all from this package (no CDN, no network); the page then talks to
 * the engine's HTTP API like any client, with the caller's own cookies or pasted token, so
 * every action goes through `authorize`.
 *
 * @example
 * createEngine({ modules, debugger: { basePath: '/_skein', ui: debuggerUi() } })
 */
export function debuggerUi(options: DebuggerUiOptions = {}): DebuggerUi {
  const title = options.title ?? 'Skein debugger'
  const apiBase = (options.apiBase ?? '').replace(/\/+$/, '')
  if (typeof title !== 'string' || typeof apiBase !== 'string') {
    throw new TypeError('debuggerUi: title and apiBase must be strings')
  }
  const assets = loadAssets()
  const pages = new Map<string, ReturnType<typeof renderPage>>()

  const page = (basePath: string) => {
    let rendered = pages.get(basePath)
    if (!rendered) {
      const assetBase = `${basePath}/assets/${assets.hash}`
      rendered = renderPage({
        title,
        assetBase,
        basePath,
        apiBase,
        imports: assets.imports,
      })
      pages.set(basePath, rendered)
    }
    return rendered
  }

  return {
    async fetch(request, context) {
      const { basePath } = context
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return text(405, 'method not allowed', { allow: 'GET, HEAD' })
      }
      const path = new URL(request.url).pathname.slice(basePath.length)
      if (path === '' || path === '/' || path === '/index.html') {
        const { html, csp } = page(basePath)
        return new Response(request.method === 'HEAD' ? null : html, {
          headers: {
            'content-type': 'text/html; charset=utf-8',
            'cache-control': 'no-cache',
            'content-security-policy': csp,
            ...SECURITY_HEADERS,
          },
        })
      }
      if (path === '/definitions.json') {
        const definitions = context.definitions ? await context.definitions() : []
        return json({ definitions: describeDefinitions(definitions) })
      }
      // What the host serves (the opt-in cancel routes; operations routes at all): the UI
      // offers only actions the host serves.
      if (path === '/capabilities.json') {
        return json({
          cancel: context.capabilities?.cancel === true,
          operations: context.capabilities?.operations !== false,
        })
      }
      const prefix = `/assets/${assets.hash}/`
      const asset = path.startsWith(prefix)
        ? assets.files.get(path.slice(prefix.length))
        : undefined
      if (!asset) return text(404, 'not found')
      return new Response(request.method === 'HEAD' ? null : asset.body, {
        headers: {
          'content-type': asset.contentType,
          'cache-control': IMMUTABLE,
          ...SECURITY_HEADERS,
        },
      })
    },
  }
}
