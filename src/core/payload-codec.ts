import type { EventEnvelope } from './envelope.js'
import type { Json } from './json.js'

/**
 * Which stored value a codec call is about. A codec may bind its output to it (the AES-GCM
 * codec authenticates it as associated data), so a stored value copied onto another event,
 * run or snapshot fails to decode instead of reading as that one.
 */
export interface CodecContext {
  /** `event`: an event's payload; `snapshot`: a snapshot's data; `task`: a worker task's input. */
  part: 'event' | 'snapshot' | 'task'
  runId: string
  /** The event's or snapshot's seq; a task's `<effectId>:<attempt>`. */
  id: string
}

/**
 * Encodes what a run's payloads hold before the store keeps them, and decodes what the store
 * gives back (docs/data-lifecycle.md, "Payloads encrypted at rest"). Synchronous: it runs for
 * every event of every commit, so a key service belongs in loading the keys, not here.
 * `decode` throws `PayloadUndecodableError` (`PAYLOAD_UNDECODABLE`) for a value it cannot
 * read, naming what it needs (a key id), and never returns a guess.
 *
 * @example
 * const codec = aesGcmCodec({ keys: { k1: keyBytes }, current: 'k1' })
 * const engine = createEngine({ store, codec })
 */
export interface PayloadCodec {
  encode(value: Json, context: CodecContext): Json
  decode(stored: Json, context: CodecContext): Json
  /** Whether `stored` is a value this codec wrote (what is not passes through as it is). */
  encoded(stored: Json): boolean
}

export const eventContext = (e: EventEnvelope): CodecContext => ({
  part: 'event',
  runId: e.runId,
  id: String(e.seq),
})
/** The event as the store keeps it: its payload encoded, every other field as it is. */
export function encodeEvent(codec: PayloadCodec, e: EventEnvelope): EventEnvelope {
  return { ...e, payload: codec.encode(e.payload, eventContext(e)) }
}

/** The event as readers see it; a payload the codec did not write is returned as it is. */
export function decodeEvent(codec: PayloadCodec, e: EventEnvelope): EventEnvelope {
  return codec.encoded(e.payload) ? { ...e, payload: codec.decode(e.payload, eventContext(e)) } : e
}
