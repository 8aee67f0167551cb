import type { EventEnvelope, StartResult, TransientEvent } from '../core/envelope.js'
import { httpStatusOf } from '../http/wire/status.js'
import { ClientError, clientErrorOf, networkError } from './client-error.js'
import { readFrames } from './sse-lines.js'

/** Events of a run's initial wake cycle, as they are appended. */
export interface RunStream extends AsyncIterable<EventEnvelope> {
  /** Known before the first event: the client picks it when the caller did not. */
  readonly runId: string
  /** The StartResult from the final `done` frame (rejects with the `error` frame's error). */
  readonly result: Promise<StartResult>
}

type Item = { event: EventEnvelope } | { end: true } | { error: ClientError }

/**
 * Starts the request at once (the run starts even if nobody iterates) and buffers frames for
 * the iterator. Breaking out of the loop aborts the request; the run itself keeps going.
 */
export function openRunStream(
  runId: string,
  onTransient: ((event: TransientEvent) => void) | undefined,
  send: (signal: AbortSignal) => Promise<Response>,
): RunStream {
  const controller = new AbortController()
  const queue: Item[] = []
  let wake: (() => void) | undefined
  let settle!: { resolve: (r: StartResult) => void; reject: (e: ClientError) => void }
  const result = new Promise<StartResult>((resolve, reject) => {
    settle = { resolve, reject }
  })
  // Iterating callers see the error from the iterator; do not also report it as unhandled.
  result.catch(() => {})

  const push = (item: Item) => {
    queue.push(item)
    wake?.()
  }
  const fail = (error: ClientError) => {
    settle.reject(error)
    push({ error })
  }

  void (async () => {
    let response: Response
    try {
      response = await send(controller.signal)
    } catch (error) {
      return fail(networkError(error))
    }
    if (!response.ok || !response.body) return fail(await clientErrorOf(response))
    let finished = false
    try {
      await readFrames(response.body, (frame) => {
        if (finished) return
        if (frame.event === 'message') push({ event: JSON.parse(frame.data) as EventEnvelope })
        else if (frame.event === 'transient') {
          try {
            onTransient?.(JSON.parse(frame.data) as TransientEvent)
          } catch {
            // A consumer's failure never breaks the stream of durable events.
          }
        } else if (frame.event === 'done') {
          finished = true
          settle.resolve(JSON.parse(frame.data) as StartResult)
          push({ end: true })
        } else if (frame.event === 'error') {
          finished = true
          const info = (
            JSON.parse(frame.data) as { error: { code: string; message: string; details?: never } }
          ).error
          fail(new ClientError(httpStatusOf(info.code), info.code, info.message, info.details))
        }
      })
    } catch (error) {
      if (!finished) fail(networkError(error))
      return
    }
    if (!finished) {
      fail(
        new ClientError(
          0,
          'STREAM_INTERRUPTED',
          `the start stream of run ${runId} ended before its result; read the run to see where it got to`,
          { runId },
        ),
      )
    }
  })()

  return {
    runId,
    result,
    [Symbol.asyncIterator]() {
      return {
        async next(): Promise<IteratorResult<EventEnvelope>> {
          while (queue.length === 0) await new Promise<void>((r) => (wake = r))
          wake = undefined
          const item = queue[0]
          if ('event' in item) {
            queue.shift()
            return { value: item.event, done: false }
          }
          if ('error' in item) {
            queue.shift()
            queue.push({ end: true })
            throw item.error
          }
          return { value: undefined, done: true }
        },
        async return(): Promise<IteratorResult<EventEnvelope>> {
          controller.abort()
          queue.length = 0
          queue.push({ end: true })
          return { value: undefined, done: true }
        },
      }
    },
  }
}
