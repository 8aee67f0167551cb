import type { EventEnvelope, RunStatus } from '../core/envelope.js'
import { RT } from '../core/runtime-events.js'
import type { Engine } from '../runtime/engine-types.js'
import { createFrameStream } from './frame-stream.js'
import type { LiveStreams } from './live-streams.js'
import type { SseContext } from './route-types.js'
import { guardStream } from './stream-guard.js'
import type { TypeFilter } from './type-filter.js'
import { formatNamedFrame, SSE_HEADERS, SSE_KEEPALIVE, SSE_PREAMBLE } from './wire/sse-format.js'

export interface EventStreamConfig {
  engine: Engine
  streams: LiveStreams
  runId: string
  /** The last seq the client already has: the stream starts at afterSeq + 1. */
  afterSeq: number
  signal?: AbortSignal
  sse: SseContext
  /** Only events (durable and transient) whose type passes are sent; seqs stay the ids. */
  matches?: TypeFilter
}

const encoder = new TextEncoder()
const PREAMBLE = encoder.encode(SSE_PREAMBLE)
const KEEPALIVE = encoder.encode(SSE_KEEPALIVE)

/** The events that finish a run, and the status each leaves it in. */
const FINISHED_BY: ReadonlyMap<string, RunStatus> = new Map([
  [RT.runCompleted, 'completed'],
  [RT.runFailed, 'failed'],
  [RT.runCancelled, 'cancelled'],
])
const isFinished = (status: RunStatus) => status !== 'running' && status !== 'queued'

/**
 * A live event stream of one run: catch-up from the store, then live events, with no gap and
 * no duplicate at the seam. The order is what makes the seam safe: subscribe first, then read
 * the store in pages; while catching up, live events only record how far the log has grown,
 * and catch-up goes live once a page reaches that point. A gap in live events (one the
 * listener never saw) sends the stream back to the store, so it is never delivered.
 *
 * Memory is bounded by bytes (stream-guard.ts): a page is read only when the consumer has
 * taken the previous one and holds at most `pageBytes` even of the largest events; live
 * frames queue up to `maxBufferedBytes`/`maxBufferedEvents`, past which the subscriber is too
 * slow and its stream ends; a consumer that does not drain within `drainTimeoutMs` is dropped;
 * and the streams together stay under `maxTotalBufferedBytes`. A client that lost its stream
 * resumes with Last-Event-ID and loses nothing. Throws (before any byte is sent) when the run
 * does not exist, so the caller answers with a proper 404.
 *
 * A finished run's stream ends: live, right after the batch that holds the run's terminal
 * event; caught up (the run finished before, or while, the stream read the store), once the
 * store has nothing more. The last frame is `event: end` with `{ runId, status, lastSeq }`.
 * A parked run is running, so its stream stays open.
 */
export async function openEventStream(config: EventStreamConfig): Promise<Response> {
  const { engine, streams, runId, signal } = config
  const matches = config.matches ?? (() => true)
  const { limits, timers, pageLimit: limit } = config.sse

  let cursor = config.afterSeq
  // The run's final status once it is known to be finished.
  let finished: RunStatus | undefined
  let catchingUp = true
  // The highest seq a listener reported while catching up: catch-up ends only past it.
  let seenTail = 0
  // The consumer has not taken everything written: the next page waits for its drain.
  let behind = false
  let pumping = false
  let closed = false
  let keepalive: unknown
  let unregister = () => {}
  let unsubscribe = () => {}
  let unsubscribeTransient = () => {}

  const detach = () => {
    if (closed) return false
    closed = true
    unsubscribe()
    unsubscribeTransient()
    unregister()
    if (keepalive !== undefined) timers.clearInterval(keepalive)
    signal?.removeEventListener('abort', close)
    return true
  }
  /** Ends the stream after the frames already queued. */
  function close() {
    if (detach()) guard.end()
  }
  const write = (frame: Uint8Array) => {
    if (!guard.write(frame)) behind = true
  }
  // A filtered-out event is passed over, not sent: the cursor (and `end`'s lastSeq) still
  // covers it, and the next id sent is the next matching seq.
  const deliver = (event: EventEnvelope, frame?: Uint8Array) => {
    finished = FINISHED_BY.get(event.type) ?? finished
    if (matches(event.type)) write(frame ?? streams.frame(event))
    cursor = event.seq
  }
  /** The run finished and everything up to its end has gone out: the last frame, then close. */
  const end = (status: RunStatus) => {
    write(encoder.encode(formatNamedFrame('end', { runId, status, lastSeq: cursor })))
    close()
  }

  // Called inside the store's append: it must never throw back into a committed write.
  const listener = (events: readonly EventEnvelope[]) => {
    if (closed || events.length === 0) return
    try {
      if (catchingUp) {
        seenTail = Math.max(seenTail, events[events.length - 1].seq)
        return
      }
      for (const event of events) {
        if (closed || event.seq <= cursor) continue
        if (event.seq !== cursor + 1) {
          // A hole: this listener missed an event. Read on from the store instead.
          catchingUp = true
          seenTail = Math.max(seenTail, events[events.length - 1].seq)
          return void pump()
        }
        if (!matches(event.type)) {
          deliver(event)
          continue
        }
        const frame = streams.frame(event)
        if (!guard.fits(frame.byteLength)) return close()
        deliver(event, frame)
      }
      if (finished && !closed) end(finished)
    } catch {
      close()
    }
  }

  unsubscribe = await engine.subscribe(runId, listener)
  // Transient events (never stored, e.g. streamed text) go out as `event: transient` frames
  // with no id, so they never move the resume cursor; during catch-up they are dropped.
  unsubscribeTransient = engine.subscribeTransient(runId, (event) => {
    if (closed || catchingUp || !matches(event.type)) return
    try {
      const frame = encoder.encode(formatNamedFrame('transient', event))
      if (guard.fits(frame.byteLength)) write(frame)
    } catch {
      close()
    }
  })
  let firstPage: EventEnvelope[] | undefined
  try {
    // A run finished before the stream opened ends once caught up, even when the client has
    // its terminal event already (a resume after the end). A run whose state cannot be
    // folded (say its definition is gone) still has a log to stream: it ends on a terminal
    // event only. A missing run is the read's 404 below.
    const status = await engine.getRun(runId).then(
      (state) => state.status,
      () => undefined,
    )
    if (status && isFinished(status)) finished = status
    firstPage = await engine.getEvents(runId, { fromSeq: cursor + 1, limit })
  } catch (error) {
    closed = true
    unsubscribe()
    unsubscribeTransient()
    throw error
  }

  /** Writes one catch-up page from the store; past the tail the listener saw, goes live. */
  const readPage = async (): Promise<void> => {
    if (guard.overBudget()) return guard.drop()
    let page: EventEnvelope[]
    if (firstPage) {
      page = firstPage
      firstPage = undefined
    } else {
      try {
        page = await engine.getEvents(runId, { fromSeq: cursor + 1, limit })
      } catch {
        return close()
      }
    }
    for (const event of page) {
      if (closed) return
      if (event.seq > cursor) deliver(event)
    }
    if (page.length < limit && cursor >= seenTail) {
      catchingUp = false
      if (finished) end(finished)
    }
  }
  // Pages go out while the consumer keeps up; one it has not taken holds the next until it
  // drains, so a slow reader also slows the store reads and never holds more than a page.
  async function pump(): Promise<void> {
    if (pumping) return
    pumping = true
    try {
      while (catchingUp && !closed && !behind) await readPage()
    } catch {
      // Nothing here may reject into the void: a failure ends the stream, the client resumes.
      close()
    } finally {
      pumping = false
    }
  }

  const { sink, response } = createFrameStream(
    {
      start: () => void pump(),
      drained() {
        behind = false
        guard.drained()
        void pump()
      },
      cancel() {
        detach()
        guard.release()
      },
    },
    { status: 200, headers: SSE_HEADERS },
  )
  const guard = guardStream(sink, streams, limits, timers, () => {
    detach()
  })
  write(PREAMBLE)
  unregister = streams.add(close)
  signal?.addEventListener('abort', close, { once: true })
  if (signal?.aborted) {
    close()
    return response
  }
  keepalive = timers.setInterval(() => {
    if (!closed && guard.fits(KEEPALIVE.byteLength)) write(KEEPALIVE)
  }, limits.keepaliveMs)
  return response
}
