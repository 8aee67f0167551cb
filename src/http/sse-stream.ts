import type { EventEnvelope } from '../core/envelope.js'
import type { Engine } from '../runtime/engine-types.js'
import { createFrameStream, type FrameSink } from './frame-stream.js'
import type { LiveStreams } from './live-streams.js'
import type { SseTimers } from './route-types.js'
import {
  formatNamedFrame,
  SSE_HEADERS,
  SSE_KEEPALIVE,
  SSE_KEEPALIVE_MS,
  SSE_PREAMBLE,
} from './sse-format.js'

export interface EventStreamConfig {
  engine: Engine
  streams: LiveStreams
  runId: string
  /** The last seq the client already has: the stream starts at afterSeq + 1. */
  afterSeq: number
  signal?: AbortSignal
  keepaliveMs?: number
  maxBufferedEvents?: number
  pageSize?: number
  timers?: SseTimers
}

const encoder = new TextEncoder()
const PREAMBLE = encoder.encode(SSE_PREAMBLE)
const KEEPALIVE = encoder.encode(SSE_KEEPALIVE)

const defaultTimers: SseTimers = {
  setInterval: (callback, ms) => {
    const handle = setInterval(callback, ms)
    // A keepalive alone must not keep a process alive.
    handle.unref?.()
    return handle
  },
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
}

/**
 * A live event stream of one run: catch-up from the store, then live events, with no gap and
 * no duplicate at the seam. The order is what makes the seam safe: subscribe first (live
 * events queue up), read the store in pages, then drain the queue skipping seqs already sent.
 *
 * Memory is bounded: live events queue for the consumer (the Web body's queue, or frames a
 * socket has not drained; and, before catch-up ends, `pending`) up to `maxBufferedEvents`;
 * past that the subscriber is too slow and is disconnected, and it resumes with Last-Event-ID.
 * Throws (before any byte is sent) when the run does not exist, so the caller answers with a
 * proper 404. The frames go through frame-stream.ts to whichever consumer takes them.
 */
export async function openEventStream(config: EventStreamConfig): Promise<Response> {
  const { engine, streams, runId, signal } = config
  const maxBuffered = config.maxBufferedEvents ?? 1000
  const pageSize = config.pageSize ?? 500
  const timers = config.timers ?? defaultTimers

  let cursor = config.afterSeq
  let catchingUp = true
  let closed = false
  let pending: EventEnvelope[] = []
  let out: FrameSink | undefined
  let keepalive: unknown
  let unregister = () => {}

  let unsubscribeTransient = () => {}
  const close = () => {
    if (closed) return
    closed = true
    unsubscribe()
    unsubscribeTransient()
    unregister()
    if (keepalive !== undefined) timers.clearInterval(keepalive)
    signal?.removeEventListener('abort', close)
    out?.end()
  }

  // Sends events in seq order from the cursor. The store is authoritative (a jump there is a
  // trimmed prefix); a hole in live events means we missed one, so end the stream and let the
  // client resume from its last id rather than deliver a gap. Only called once `out` exists:
  // live events reach it after catch-up, and catch-up runs when the consumer pulls.
  const send = (events: readonly EventEnvelope[], fromStore = false) => {
    const sink = out as FrameSink
    for (const event of events) {
      if (closed) return
      if (event.seq <= cursor) continue
      if (event.seq !== cursor + 1 && !fromStore) return close()
      sink.write(streams.frame(event))
      cursor = event.seq
    }
    if (sink.backlog() > maxBuffered) close()
  }

  // Called inside the store's append: it must never throw back into a committed write.
  const listener = (events: readonly EventEnvelope[]) => {
    if (closed) return
    try {
      if (!catchingUp) return send(events)
      for (const event of events) pending.push(event)
      if (pending.length > maxBuffered) close()
    } catch {
      close()
    }
  }

  const unsubscribe = await engine.subscribe(runId, listener)
  // Transient events (never stored, e.g. streamed text) go out as `event: transient` frames
  // with no id, so they never move the resume cursor; during catch-up they are dropped.
  unsubscribeTransient = engine.subscribeTransient(runId, (event) => {
    if (closed || catchingUp || !out) return
    try {
      out.write(encoder.encode(formatNamedFrame('transient', event)))
      if (out.backlog() > maxBuffered) close()
    } catch {
      close()
    }
  })
  let firstPage: EventEnvelope[] | undefined
  try {
    firstPage = await engine.getEvents(runId, { fromSeq: cursor + 1, limit: pageSize })
  } catch (error) {
    closed = true
    unsubscribe()
    throw error
  }

  // Catch-up runs one page per pull, so a slow reader also slows the store reads.
  const catchUp = async (): Promise<boolean> => {
    if (!catchingUp || closed) return false
    let page: EventEnvelope[]
    if (firstPage) {
      page = firstPage
      firstPage = undefined
    } else {
      try {
        page = await engine.getEvents(runId, { fromSeq: cursor + 1, limit: pageSize })
      } catch {
        close()
        return false
      }
    }
    send(page, true)
    if (page.length < pageSize) {
      catchingUp = false
      const buffered = pending
      pending = []
      send(buffered)
    }
    return catchingUp && !closed
  }

  const { sink, response } = createFrameStream(
    { pull: catchUp, cancel: close },
    { status: 200, headers: SSE_HEADERS },
  )
  out = sink
  sink.write(PREAMBLE)
  if (closed) {
    sink.end()
    return response
  }
  unregister = streams.add(close)
  signal?.addEventListener('abort', close, { once: true })
  if (signal?.aborted) {
    close()
    return response
  }
  keepalive = timers.setInterval(() => {
    if (!closed && sink.backlog() < maxBuffered) sink.write(KEEPALIVE)
  }, config.keepaliveMs ?? SSE_KEEPALIVE_MS)
  return response
}
