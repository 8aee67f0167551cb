import type { EventEnvelope, TransientEvent } from '../core/envelope.js'
import { backoffAfter } from '../core/retry.js'
import type { StreamEnd } from '../http/wire/sse-format.js'
import { ClientError, clientErrorOf, networkError } from './client-error.js'
import { readFrames } from './sse-lines.js'

export interface ClientTimers {
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export interface ReconnectOptions {
  /** First delay after a failure (default 500 ms); doubles per failure up to maxDelayMs. */
  initialDelayMs?: number
  /** Largest delay between attempts (default 30 s). */
  maxDelayMs?: number
}

export interface SubscribeOptions {
  /** First seq to deliver (inclusive, default 1). */
  fromSeq?: number
  /**
   * Only events of these types (exact, or `prefix.*`), filtered by the server; seqs are not
   * renumbered, so the delivered seqs skip the others. Transient events are filtered too.
   */
  types?: readonly string[]
  /** Failures: each dropped connection (the subscription retries) and the final one (it stops). */
  onError?: (error: ClientError, info: { retrying: boolean; delayMs?: number }) => void
  /** Aborting it unsubscribes. */
  signal?: AbortSignal
  /** Transient (never stored) events, e.g. streamed text; missed while disconnected. */
  onTransient?: (event: TransientEvent) => void
  /**
   * The run finished and every event up to its end was delivered: the server's `end` frame.
   * The subscription stops (it does not reconnect) right after.
   */
  onEnd?: (end: StreamEnd) => void
}

export interface SubscribeDeps {
  url: (lastSeq: number) => string
  headers: () => Headers
  fetch: typeof globalThis.fetch
  timers: ClientTimers
  reconnect: Required<ReconnectOptions>
  random: () => number
}

/** 4xx answers other than timeouts and rate limits will not get better by retrying. */
const isPermanent = (error: ClientError) =>
  error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429

/**
 * A reconnecting live subscription. The cursor is the last seq handed to `onEvent`; every
 * (re)connect sends it as Last-Event-ID, and anything at or below it is dropped, so the
 * consumer sees each seq once, in order, across any number of reconnects. Backoff doubles
 * per consecutive failure (with jitter) and resets once a connection is accepted. The `end`
 * frame of a finished run stops it.
 */
export function subscribeEvents(
  deps: SubscribeDeps,
  onEvent: (event: EventEnvelope) => void,
  options: SubscribeOptions = {},
): () => void {
  let lastSeq = Math.max(0, (options.fromSeq ?? 1) - 1)
  let stopped = false
  let failures = 0
  let timer: unknown
  let current: AbortController | undefined

  const stop = () => {
    if (stopped) return
    stopped = true
    if (timer !== undefined) deps.timers.clearTimeout(timer)
    current?.abort()
    options.signal?.removeEventListener('abort', stop)
  }

  const retry = (error: ClientError) => {
    if (stopped) return
    const { initialDelayMs: initialMs, maxDelayMs: maxMs } = deps.reconnect
    const base = backoffAfter(failures + 1, { initialMs, maxMs })
    const delayMs = Math.round(base / 2 + (deps.random() * base) / 2)
    failures++
    options.onError?.(error, { retrying: true, delayMs })
    timer = deps.timers.setTimeout(() => {
      timer = undefined
      void connect()
    }, delayMs)
  }

  const connect = async () => {
    if (stopped) return
    const controller = (current = new AbortController())
    const headers = deps.headers()
    headers.set('accept', 'text/event-stream')
    headers.set('last-event-id', String(lastSeq))
    let response: Response
    try {
      response = await deps.fetch(deps.url(lastSeq), { headers, signal: controller.signal })
    } catch (error) {
      return retry(networkError(error))
    }
    if (!response.ok || !response.body) {
      const error = await clientErrorOf(response)
      if (isPermanent(error)) {
        options.onError?.(error, { retrying: false })
        return stop()
      }
      return retry(error)
    }
    failures = 0
    try {
      await readFrames(response.body, (frame) => {
        if (!stopped && frame.event === 'transient') {
          try {
            options.onTransient?.(JSON.parse(frame.data) as TransientEvent)
          } catch {
            // A consumer's failure never breaks the subscription.
          }
          return
        }
        if (!stopped && frame.event === 'end') {
          stop()
          try {
            options.onEnd?.(JSON.parse(frame.data) as StreamEnd)
          } catch {
            // A consumer's failure changes nothing: the run has ended either way.
          }
          return
        }
        if (stopped || frame.id === undefined || frame.event !== 'message') return
        const seq = Number(frame.id)
        if (!Number.isSafeInteger(seq) || seq <= lastSeq) return
        const event = JSON.parse(frame.data) as EventEnvelope
        lastSeq = seq
        try {
          onEvent(event)
        } catch (error) {
          // The consumer's own failure: report it, keep the stream (the event was delivered).
          options.onError?.(
            new ClientError(
              0,
              'LISTENER_ERROR',
              error instanceof Error ? error.message : String(error),
              undefined,
              { cause: error },
            ),
            { retrying: true },
          )
        }
      })
    } catch (error) {
      if (stopped) return
      return retry(ClientError.is(error) ? error : networkError(error))
    }
    retry(new ClientError(0, 'STREAM_ENDED', 'the event stream ended; reconnecting'))
  }

  if (options.signal?.aborted) return stop
  options.signal?.addEventListener('abort', stop, { once: true })
  void connect()
  return stop
}
