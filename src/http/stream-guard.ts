import type { FrameSink } from './frame-stream.js'
import type { LiveStreams } from './live-streams.js'
import type { SseLimits, SseTimers } from './sse-limits.js'

/** One SSE connection's writes, held to its share of memory. */
export interface StreamGuard {
  /**
   * Writes a frame; false when the consumer did not take it at once (it is behind, and must
   * drain within `drainTimeoutMs`) or the stream was dropped.
   */
  write(frame: Uint8Array): boolean
  /** Whether a live frame of `bytes` may be queued now without passing the per-stream bounds. */
  fits(bytes: number): boolean
  /** Whether the streams together hold so much that this one must not read another page. */
  overBudget(): boolean
  /** The consumer took everything queued. */
  drained(): void
  /** Ends after the queued frames; if they are not taken within the drain timeout, drops them. */
  end(): void
  /** Ends now and discards the queued frames. */
  drop(): void
  /** The consumer is gone: stop counting this stream. */
  release(): void
}

/**
 * Backpressure bookkeeping for one connection. Every write updates this stream's share of the
 * bytes queued across all streams (`streams.bufferedBytes`). A write the consumer does not take
 * at once arms a timer: unless the consumer drains within `drainTimeoutMs`, the stream is
 * dropped (its queued frames discarded, the socket closed) and `onDropped` runs. A write that
 * leaves the streams together over `maxTotalBufferedBytes` drops this stream at once if it holds
 * any of those bytes: the slowest consumers go first, and each resumes with Last-Event-ID.
 */
export function guardStream(
  sink: FrameSink,
  streams: LiveStreams,
  limits: SseLimits,
  timers: SseTimers,
  onDropped: () => void,
): StreamGuard {
  let counted = 0
  let timer: unknown
  let done = false

  const recount = () => {
    const now = done ? 0 : sink.bufferedBytes()
    streams.account(now - counted)
    counted = now
  }
  const disarm = () => {
    if (timer === undefined) return
    timers.clearTimeout(timer)
    timer = undefined
  }
  const drop = () => {
    disarm()
    sink.destroy()
    release()
    onDropped()
  }
  const release = () => {
    disarm()
    done = true
    recount()
  }

  return {
    write(frame) {
      if (done) return false
      const taken = sink.write(frame)
      recount()
      if (counted > 0 && streams.bufferedBytes > limits.maxTotalBufferedBytes) {
        drop()
        return false
      }
      if (!taken && timer === undefined) timer = timers.setTimeout(drop, limits.drainTimeoutMs)
      return taken
    },
    fits(bytes) {
      const queued = sink.bufferedBytes()
      return (
        sink.backlog() < limits.maxBufferedEvents &&
        (queued === 0 || queued + bytes <= limits.maxBufferedBytes)
      )
    },
    overBudget: () => streams.bufferedBytes - counted >= limits.maxTotalBufferedBytes,
    drained() {
      disarm()
      recount()
    },
    end() {
      sink.end()
      // Nothing queued: nothing left to guard. Otherwise the drain timer (armed when the
      // consumer fell behind) still drops what it never takes.
      if (sink.bufferedBytes() === 0) release()
    },
    drop() {
      if (!done) drop()
    },
    release,
  }
}
