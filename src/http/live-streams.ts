import type { EventEnvelope } from '../core/envelope.js'
import { formatEventFrame } from './sse-format.js'

/**
 * The open SSE streams of one handler, so `closeStreams()` (server close, engine stop) can end
 * them, plus a per-envelope frame cache: the store hands every subscriber the same envelope
 * objects, so 200 subscribers of one run serialize each event once, not 200 times.
 */
export interface LiveStreams {
  add(close: () => void): () => void
  closeAll(): void
  readonly size: number
  frame(event: EventEnvelope): Uint8Array
}

export function createLiveStreams(): LiveStreams {
  const open = new Set<() => void>()
  const frames = new WeakMap<EventEnvelope, Uint8Array>()
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
      if (!bytes) {
        bytes = encoder.encode(formatEventFrame(event.seq, event))
        frames.set(event, bytes)
      }
      return bytes
    },
  }
}
