import type { EventEnvelope } from './envelope.js'
import { PayloadUndecodableError } from './errors.js'
import type { Json } from './json.js'
import { jsonTextOf, withJsonText } from './json-text.js'

/**
 * Which stored value a codec call is about. A codec may bind its output to it (the AES-GCM
 * codec authenticates it as associated data), so a stored value copied onto another event,
 * run or snapshot fails to decode instead of reading as that one.
 */
export interface CodecContext {
  /**
   * `event`: an event's payload; `snapshot`: a snapshot's data; `task`: a worker task's input;
   * `debounce`: the last input of a debounce window (docs/flow-control.md).
   */
  part: 'event' | 'snapshot' | 'task' | 'debounce'
  /** The run; '' for a debounce window (a start joining one does not know its run). */
  runId: string
  /** The event's or snapshot's seq; a task's `<effectId>:<attempt>`; '' for a debounce window. */
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
/**
 * The events whose `attributes` the stores index for search (docs/operating-runs.md,
 * "Attributes"): stored beside their sealed payload, in clear, as `{ attributes, $sealed }`.
 */
export const ATTRIBUTE_EVENTS = new Set(['runtime.run.started', 'runtime.run.attributes'])

export const attributesOf = (payload: Json): Json | undefined =>
  typeof payload === 'object' && payload !== null && !Array.isArray(payload)
    ? payload.attributes
    : undefined

/**
 * The event as the store keeps it: its payload encoded, every other field as it is. The
 * attributes of a start or an attribute change stay in clear beside it, for search.
 */
export function encodeEvent(codec: PayloadCodec, e: EventEnvelope): EventEnvelope {
  const sealed = codec.encode(e.payload, eventContext(e))
  return { ...e, payload: besideAttributes(e, sealed) }
}

/**
 * What the store keeps as the payload of `e` for `stored`: it, or `{ attributes, $sealed }` for
 * a start or an attribute change, with its JSON text (`withJsonText`) so the store serializes
 * nothing twice.
 */
export function besideAttributes(e: EventEnvelope, stored: Json): Json {
  const attributes = ATTRIBUTE_EVENTS.has(e.type) ? attributesOf(e.payload) : undefined
  if (attributes === undefined) return stored
  return withJsonText(
    { attributes, $sealed: stored },
    `{"attributes":${JSON.stringify(attributes)},"$sealed":${jsonTextOf(stored)}}`,
  )
}

/** What the codec wrote for the event: its payload, or `$sealed` beside a start's attributes. */
export function storedPayloadOf(e: EventEnvelope): Json {
  const { payload } = e
  return ATTRIBUTE_EVENTS.has(e.type) &&
    typeof payload === 'object' &&
    payload !== null &&
    !Array.isArray(payload) &&
    payload.$sealed !== undefined
    ? payload.$sealed
    : payload
}

/** The seq of the batch's last event, when the stored payload was sealed with its batch. */
export function batchMemberOf(stored: Json): number | undefined {
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return undefined
  const seq = stored.$inBatch
  return typeof seq === 'number' && Object.keys(stored).length === 1 ? seq : undefined
}

/** The stored payload of a batch's last event: the batch's sealed payloads and its first seq. */
export function batchHolderOf(
  codec: PayloadCodec,
  stored: Json,
): { $batch: Json; $from: number } | undefined {
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return undefined
  return typeof stored.$from === 'number' &&
    stored.$batch !== undefined &&
    codec.encoded(stored.$batch)
    ? { $batch: stored.$batch, $from: stored.$from }
    : undefined
}

/**
 * The event as readers see it; a payload the codec did not write is returned as it is. An event
 * sealed with its append's batch (`{ $inBatch }` or `{ $batch, $from }`) needs the batch's last
 * event: read it with `decodeEvents(codec, events)`, which this refuses to guess.
 */
export function decodeEvent(codec: PayloadCodec, e: EventEnvelope): EventEnvelope {
  const stored = storedPayloadOf(e)
  if (batchMemberOf(stored) !== undefined || batchHolderOf(codec, stored))
    throw new PayloadUndecodableError(
      `cannot decode the event payload of run ${e.runId} at ${e.seq} alone: it is sealed with its batch; decode the run's events together (decodeEvents)`,
      { runId: e.runId, part: 'event', id: String(e.seq), keyId: null },
    )
  return codec.encoded(stored) ? { ...e, payload: codec.decode(stored, eventContext(e)) } : e
}
