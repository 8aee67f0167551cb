import type { HttpHandler } from '../../src/http/handler.js'

/** The handler as a client `fetch`: no socket, and `null` (outside the API) becomes a 404. */
export const inProcess =
  (http: HttpHandler) =>
  async (request: Request): Promise<Response> =>
    (await http.fetch(request)) ?? new Response(null, { status: 404 })

/** Reconnect timers that fire on the next turn of the event loop and record the delays asked. */
export function immediateTimers() {
  const delays: number[] = []
  return {
    delays,
    setTimeout(callback: () => void, ms: number) {
      delays.push(ms)
      return setImmediate(callback)
    },
    clearTimeout(handle: unknown) {
      clearImmediate(handle as NodeJS.Immediate)
    },
  }
}

/** A seeded PRNG (mulberry32) so torture runs are reproducible. */
export function prng(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Wraps a fetch so every event-stream response is cut after a random number of bytes (often
 * mid-frame): the body errors as a dropped connection would, and the upstream is cancelled.
 */
export function cuttingFetch(
  base: (request: Request) => Promise<Response>,
  random: () => number,
  maxBytes = 700,
) {
  const stats = { cuts: 0, connects: 0 }
  const fetch = async (request: Request) => {
    const response = await base(request)
    if (!response.headers.get('content-type')?.startsWith('text/event-stream')) return response
    stats.connects++
    let budget = 1 + Math.floor(random() * maxBytes)
    const reader = response.body!.getReader()
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read()
        if (done) return controller.close()
        if (value.byteLength >= budget) {
          controller.enqueue(value.subarray(0, budget))
          stats.cuts++
          reader.cancel().catch(() => {})
          controller.error(new TypeError('connection reset (forced)'))
          return
        }
        budget -= value.byteLength
        controller.enqueue(value)
      },
      cancel: () => reader.cancel(),
    })
    return new Response(body, { status: response.status, headers: response.headers })
  }
  return { fetch, stats }
}
