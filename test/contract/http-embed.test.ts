import { createEngine, type Engine } from 'skein'
import { describeHttpHost, type HttpHost } from 'skein/testing/vitest'

// The HTTP host contract on the embed handler: in process (`engine.fetch`) and over a real
// server on 127.0.0.1 (`engine.serve({ port: 0 })`).
describeHttpHost('embed', (setup) => createEngine(setup))

const LISTING = new Set(['/runs', '/runs/summaries'])

/**
 * A host without a global run listing, as the actor host will be: the embed engine
 * behind a front that answers 501 NOT_SUPPORTED for the listing routes once a request passed
 * authorization and validation. Declaring that difference is how such a host joins the suite.
 */
function withoutListing(engine: Engine): HttpHost {
  return {
    async fetch(request) {
      const res = await engine.fetch(request)
      const listing = request.method === 'GET' && LISTING.has(new URL(request.url).pathname)
      if (!res?.ok || !listing) return res
      await res.body?.cancel()
      const error = { code: 'NOT_SUPPORTED', message: 'this host has no global run listing' }
      return Response.json({ error }, { status: 501 })
    },
    stop: () => engine.stop(),
  }
}

describeHttpHost('embed without a run listing', (setup) => withoutListing(createEngine(setup)), {
  differences: { notSupported: ['runs.list', 'runs.summaries'] },
  transports: ['in-process'],
})
