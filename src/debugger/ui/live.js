// Live events over SSE, read with fetch (EventSource cannot send a bearer token). Resumes after
// the last seq it delivered, so a reconnect brings no gap and no duplicate.
import { ApiError, authHeaders, config, enc } from './api.js'

/**
 * Calls `onEvents(batch)` with durable events after `afterSeq`, and `onStatus({ live, error })`
 * when the connection changes. Returns a function that stops it. A 4xx answer stops for good.
 */
export function followEvents(runId, afterSeq, onEvents, onStatus) {
  let last = afterSeq
  let stopped = false
  let controller
  const run = async () => {
    let delay = 500
    while (!stopped) {
      controller = new AbortController()
      try {
        const response = await fetch(`${config.apiBase}/runs/${enc(runId)}/events?live=true`, {
          headers: authHeaders({ accept: 'text/event-stream', 'last-event-id': String(last) }),
          credentials: 'same-origin',
          signal: controller.signal,
        })
        if (!response.ok) {
          const body = await response.json().catch(() => null)
          const error = new ApiError(
            response.status,
            body?.error?.code ?? `HTTP_${response.status}`,
            body?.error?.message ?? 'live events refused',
          )
          if (response.status < 500) {
            onStatus({ live: false, error })
            return
          }
          throw error
        }
        onStatus({ live: true })
        delay = 500
        await readFrames(response.body, (batch) => {
          const fresh = batch.filter((e) => e.seq > last)
          if (fresh.length === 0) return
          last = fresh[fresh.length - 1].seq
          onEvents(fresh)
        })
      } catch (error) {
        if (stopped) return
        onStatus({ live: false, error })
      }
      if (stopped) return
      await new Promise((resolve) => setTimeout(resolve, delay))
      delay = Math.min(delay * 2, 10_000)
    }
  }
  run()
  return () => {
    stopped = true
    controller?.abort()
  }
}

/** Parses `id:`/`event:`/`data:` frames; hands over the durable events of each chunk at once. */
async function readFrames(body, onBatch) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += value.replace(/\r\n?/g, '\n')
    const frames = buffer.split('\n\n')
    buffer = frames.pop()
    const batch = []
    for (const frame of frames) {
      let event = 'message'
      let data = ''
      for (const line of frame.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim()
        else if (line.startsWith('data:')) data += line.slice(5).trimStart()
      }
      if (event === 'message' && data) batch.push(JSON.parse(data))
    }
    if (batch.length > 0) onBatch(batch)
  }
}
