import type { EventEnvelope } from '../core/envelope.js'
import { formatEventFrame } from './wire/sse-format.js'

/**
 * The open SSE streams of one handler, so `closeStreams()` (server close, engine stop) can end
 * them; the bytes they hold queued for their consumers, summed against a budget across
 * streams; and a small cache of encoded frames: the store hands every subscriber the same
 * envelope objects, so 200 subscribers of one run serialize each event once, not 200 times.
 */
export interface LiveStreams {
  add(close: () => void): () => void
  closeAll(): void
  readonly size: number
  frame(event: EventEnvelope): Uint8Array
  /** Bytes queued for consumers across every stream (each stream reports its own changes). */
  readonly bufferedBytes: number
  account(delta: number): void
}

/**
 * The cache keeps the newest frames only, up to this many bytes: a live append reaches every
 * subscriber in one synchronous loop, so recent frames are all a fan-out needs. (Keyed weakly
 * by envelope, it kept a frame beside every event of the memory store, which holds its
 * envelopes for ever: twice the memory of a log once anyone had streamed it.)
 */
const FRAME_CACHE_BYTES = 4 * 1024 * 1024
const FRAME_CACHE_ENTRIES = 1024

export function createLiveStreams(): LiveStreams {
  const open = new Set<() => void>()
  const frames = new Map<EventEnvelope, Uint8Array>()
  let cachedBytes = 0
  let buffered = 0
  const encoder = new TextEncoder()
  return {
    add(close) {
      open.add(close)
      return () => {
        open.delete(close)
      }
    },
    closeAll() {
      for (const close of [...open]) close()
      open.clear()
    },
    get size() {
      return open.size
    },
    frame(event) {
      let bytes = frames.get(event)
      if (bytes) return bytes
      bytes = encoder.encode(formatEventFrame(event.seq, event))
      if (bytes.byteLength > FRAME_CACHE_BYTES / 4) return bytes
      frames.set(event, bytes)
      cachedBytes += bytes.byteLength
      // Oldest first: a Map iterates in insertion order.
      for (const [old, oldBytes] of frames) {
        if (cachedBytes <= FRAME_CACHE_BYTES && frames.size <= FRAME_CACHE_ENTRIES) break
        frames.delete(old)
        cachedBytes -= oldBytes.byteLength
      }
      return bytes
    },
    get bufferedBytes() {
      return buffered
    },
    account(delta) {
      buffered += delta
    },
  }
}
