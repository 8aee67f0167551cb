import type { EventEnvelope } from './envelope.js'
import { PayloadUndecodableError } from './errors.js'
import type { Json } from './json.js'
import { jsonTextOf, withJsonText } from './json-text.js'
import {
  besideAttributes,
  type CodecContext,
  decodeEvent,
  encodeEvent,
  batchHolderOf as holderOf,
  batchMemberOf as memberOf,
  type PayloadCodec,
  storedPayloadOf,
} from './payload-codec.js'

/**
 * One append's payloads sealed together (docs/data-lifecycle.md, "Payloads encrypted at rest";
 * decisions.md, "One seal per appended batch, kept on its last event"): the last event of the
 * batch holds `{ $batch: <the codec's value of the payloads as an array>, $from: <first seq> }`,
 * every other event `{ $inBatch: <the last event's seq> }`. The last event is the holder
 * because trimming removes a run's oldest events: whichever events of a batch remain, its last
 * one does. The batch is bound to its place as `first..last` of its run, so neither the holder
 * nor a member's pointer can be moved without the read failing.
 */
const batchContext = (runId: string, from: number, to: number): CodecContext => ({
  part: 'event',
  runId,
  id: `${from}..${to}`,
})

/**
 * Events sealed together at most: a restored run arrives as one append of its whole log, and a
 * reader of one event decodes its whole batch.
 */
const MAX_BATCH = 32

/** The events of one append as the store keeps them: one `codec.encode` per batch of them. */
export function encodeEvents(
  codec: PayloadCodec,
  events: readonly EventEnvelope[],
): EventEnvelope[] {
  const first = events[0]
  const consecutive = events.every(
    (e, i) => e.runId === first?.runId && e.seq === (first?.seq ?? 0) + i,
  )
  // A batch the store will refuse anyway is sealed event by event.
  if (!consecutive) return events.map((e) => encodeEvent(codec, e))
  const out: EventEnvelope[] = []
  for (let at = 0; at < events.length; at += MAX_BATCH)
    out.push(...sealBatch(codec, events.slice(at, at + MAX_BATCH)))
  return out
}

function sealBatch(codec: PayloadCodec, events: readonly EventEnvelope[]): EventEnvelope[] {
  const first = events[0]
  const last = events[events.length - 1]
  // A lone event is sealed on its own, as every event was before batches.
  if (!first || !last || first === last) return events.map((e) => encodeEvent(codec, e))
  const sealed = codec.encode(
    events.map((e) => e.payload),
    batchContext(last.runId, first.seq, last.seq),
  )
  // The holder with its JSON text, so the store does not serialize the sealed value again.
  const holder = withJsonText(
    { $batch: sealed, $from: first.seq },
    `{"$batch":${jsonTextOf(sealed)},"$from":${first.seq}}`,
  )
  return events.map((e) => ({
    ...e,
    payload: besideAttributes(e, e === last ? holder : { $inBatch: last.seq }),
  }))
}

const placeOf = (runId: string, seq: number) => `${runId}\u0000${seq}`

/** The batch holders that `events` point at but do not hold, as `{ runId, seq }`. */
export function missingHolders(
  codec: PayloadCodec,
  events: readonly EventEnvelope[],
): Array<{ runId: string; seq: number }> {
  const present = new Set<string>()
  for (const e of events)
    if (holderOf(codec, storedPayloadOf(e))) present.add(placeOf(e.runId, e.seq))
  const missing = new Map<string, { runId: string; seq: number }>()
  for (const e of events) {
    const holder = memberOf(storedPayloadOf(e))
    if (holder === undefined) continue
    const place = placeOf(e.runId, holder)
    if (!present.has(place)) missing.set(place, { runId: e.runId, seq: holder })
  }
  return [...missing.values()]
}

/**
 * The events as readers see them. A member's payload is read from its batch's holder: in
 * `events`, or in `holders` (fetched by the caller, `missingHolders`). Each batch is decoded
 * once per call. Events in the per-event form, or not the codec's, read as `decodeEvent` does.
 */
export function decodeEvents(
  codec: PayloadCodec,
  events: readonly EventEnvelope[],
  holders: readonly EventEnvelope[] = [],
): EventEnvelope[] {
  const byPlace = new Map<string, EventEnvelope>()
  for (const e of [...holders, ...events]) byPlace.set(placeOf(e.runId, e.seq), e)
  const opened = new Map<string, { from: number; values: Json[] }>()

  const open = (holder: EventEnvelope, stored: { $batch: Json; $from: number }) => {
    const place = placeOf(holder.runId, holder.seq)
    let batch = opened.get(place)
    if (!batch) {
      const from = stored.$from
      const values = codec.decode(stored.$batch, batchContext(holder.runId, from, holder.seq))
      if (!Array.isArray(values) || values.length !== holder.seq - from + 1)
        throw undecodable(holder, holder.seq, 'its batch does not hold one payload per event')
      batch = { from, values }
      opened.set(place, batch)
    }
    return batch
  }

  const payloadAt = (e: EventEnvelope, holderSeq: number): Json => {
    const holder = byPlace.get(placeOf(e.runId, holderSeq))
    const stored = holder && holderOf(codec, storedPayloadOf(holder))
    if (!holder || !stored)
      throw undecodable(e, holderSeq, `its batch's last event (seq ${holderSeq}) was not found`)
    const { from, values } = open(holder, stored)
    if (e.seq < from || e.seq > holderSeq)
      throw undecodable(e, holderSeq, `it is not in the batch ${from}..${holderSeq}`)
    return values[e.seq - from] as Json
  }

  return events.map((e) => {
    const stored = storedPayloadOf(e)
    if (holderOf(codec, stored)) return { ...e, payload: payloadAt(e, e.seq) }
    const holderSeq = memberOf(stored)
    if (holderSeq !== undefined) return { ...e, payload: payloadAt(e, holderSeq) }
    return decodeEvent(codec, e)
  })
}

const undecodable = (e: EventEnvelope, holderSeq: number, reason: string) =>
  new PayloadUndecodableError(
    `cannot decode the event payload of run ${e.runId} at ${e.seq} (sealed with the batch ending at ${holderSeq}): ${reason}`,
    { runId: e.runId, part: 'event', id: String(e.seq), keyId: null },
  )
