import type { StartRunArgs } from '../core/api-types.js'
import type { EventEnvelope, TransientEvent } from '../core/envelope.js'
import type { Engine } from '../runtime/engine-types.js'
import { errorInfoOf, errorResponse } from './error-response.js'
import { createFrameStream } from './frame-stream.js'
import type { LiveStreams } from './live-streams.js'
import type { SseContext } from './route-types.js'
import { guardStream, type StreamGuard } from './stream-guard.js'
import { formatNamedFrame, SSE_HEADERS, SSE_PREAMBLE } from './wire/sse-format.js'

const encoder = new TextEncoder()

/**
 * Streaming start (`POST /runs` with `Accept: text/event-stream`): the run's events during
 * its initial wake cycle, then `event: done` with the StartResult or `event: error` with the
 * error body. A start that fails before its first event (unknown definition, bad input)
 * answers with a plain JSON error and its real status instead of a 200 stream.
 *
 * The run id is the caller's or one the engine makes with its `ids` (one format for every
 * start); the engine reports it through `onRunId` before writing, and the stream subscribes
 * there. Completeness does not depend on when the engine calls listeners: once the start
 * settles, any events up to `state.lastSeq` not yet seen are read from the store before `done`.
 */
export async function streamStart(
  engine: Engine,
  streams: LiveStreams,
  sse: SseContext,
  args: StartRunArgs,
  signal: AbortSignal | undefined,
): Promise<Response> {
  let runId: string | undefined
  let cursor = 0
  let closed = false
  let guard: StreamGuard | undefined
  const early: EventEnvelope[] = []
  let firstEvent!: () => void
  const sawEvent = new Promise<void>((resolve) => {
    firstEvent = resolve
  })

  const send = (events: readonly EventEnvelope[]) => {
    for (const event of events) {
      if (closed || event.runId !== runId || event.seq <= cursor) continue
      guard?.write(streams.frame(event))
      cursor = event.seq
    }
  }
  // Called inside the store's append: it must never throw back into a committed write.
  const onEvent = (events: readonly EventEnvelope[]) => {
    if (closed) return
    try {
      if (!guard) {
        early.push(...events)
        firstEvent()
      } else send(events)
    } catch {
      close()
    }
  }

  // Transient events (streamed text) while the run starts: `event: transient` frames, no id,
  // left out while the consumer is too far behind (they are never needed to resume).
  const onTransient = (event: TransientEvent) => {
    if (closed || !guard) return
    try {
      const frame = encoder.encode(formatNamedFrame('transient', event))
      if (guard.fits(frame.byteLength)) guard.write(frame)
    } catch {
      close()
    }
  }
  let unsubscribe = () => {}
  let unsubscribeTransient = () => {}
  const onRunId = async (id: string) => {
    runId = id
    unsubscribeTransient = engine.subscribeTransient(id, onTransient)
    const off = await engine.subscribe(id, onEvent)
    if (closed) off()
    else unsubscribe = off
  }
  const settled = engine.startRun(args, { onRunId }).then(
    (result) => ({ ok: true as const, result }),
    (error: unknown) => ({ ok: false as const, error }),
  )

  const first = await Promise.race([sawEvent.then(() => null), settled])
  if (first && !first.ok) {
    closed = true
    unsubscribe()
    unsubscribeTransient()
    return errorResponse(first.error)
  }

  let unregister = () => {}
  const detach = () => {
    if (closed) return false
    closed = true
    unsubscribe()
    unsubscribeTransient()
    unregister()
    signal?.removeEventListener('abort', close)
    return true
  }
  function close() {
    if (detach()) guard?.end()
  }

  const finish = async () => {
    const outcome = await settled
    if (closed) return
    if (outcome.ok) {
      const { runId: id, state } = outcome.result
      try {
        while (!closed && cursor < state.lastSeq) {
          const page = await engine.getEvents(id, { fromSeq: cursor + 1, limit: sse.pageLimit })
          if (page.length === 0) break
          send(page)
        }
      } catch {
        // The done frame still carries the state; the client can read events afterwards.
      }
      if (closed) return
      guard?.write(encoder.encode(formatNamedFrame('done', outcome.result)))
    } else {
      guard?.write(encoder.encode(formatNamedFrame('error', { error: errorInfoOf(outcome.error) })))
    }
    close()
  }

  const { sink, response } = createFrameStream(
    {
      drained: () => guard?.drained(),
      cancel() {
        detach()
        guard?.release()
      },
    },
    { status: 200, headers: SSE_HEADERS },
  )
  guard = guardStream(sink, streams, sse.limits, sse.timers, () => {
    detach()
  })
  guard.write(encoder.encode(SSE_PREAMBLE))
  send(early)
  unregister = streams.add(close)
  signal?.addEventListener('abort', close, { once: true })
  if (signal?.aborted) close()
  void finish()
  return response
}
