import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import {
  aesGcmCodec,
  decodeEvents,
  type EventEnvelope,
  type Json,
  memoryStore,
  type PayloadCodec,
} from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { jsonTextOf } from '../../src/core/json-text.js'
import { encodeEvents } from '../../src/core/sealed-batches.js'
import { codecStore } from '../../src/runtime/codec-store.js'
import { freshPath } from '../support/temp-dirs.js'

// A sealed payload carries its JSON text to the store (decisions.md, "A sealed payload carries
// its JSON text to the store"): the store writes that text instead of serializing the sealed
// value (its base64) again, and the text is exactly what JSON.stringify would write.

const codec = aesGcmCodec({ keys: { k1: Buffer.alloc(32, 1) }, current: 'k1' })
const dir = mkdtempSync(join(tmpdir(), 'skein-codec-json-text-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
afterEach(() => vi.restoreAllMocks())

const event = (seq: number, type: string, payload: Json): EventEnvelope => ({
  id: `e${seq}`,
  runId: 'r1',
  seq,
  ts: 1_000 + seq,
  type,
  threadId: 'thr_1',
  origin: 'runtime',
  payload,
})
const start = event(1, 'runtime.run.started', {
  input: { note: 'secret "quoted" \u00e9' },
  attributes: { customer: 'c-42', amount: 5 },
})
const batch = [
  start,
  event(2, 'workflow.node.completed', { result: { lines: ['a\nb', 2, null, true] } }),
  event(3, 'runtime.effect.requested', { effectId: 'eff_1', input: { i: 0 } }),
]
const lone = [event(4, 'runtime.run.attributes', { attributes: { customer: 'c-43' } })]

describe('sealed payloads carry their JSON text', () => {
  it('the text of every stored form is what JSON.stringify writes', () => {
    const plainCodec: PayloadCodec = {
      encoded: (s) => typeof s === 'object' && s !== null && !Array.isArray(s) && 'sealed' in s,
      encode: (value) => ({ sealed: JSON.stringify(value) }),
      decode: (s) => JSON.parse((s as { sealed: string }).sealed),
    }
    for (const c of [codec, plainCodec]) {
      const stored = [...encodeEvents(c, batch), ...encodeEvents(c, lone)]
      expect(stored.map((e) => jsonTextOf(e.payload))).toEqual(
        stored.map((e) => JSON.stringify(e.payload)),
      )
      expect(decodeEvents(c, stored)).toEqual([...batch, ...lone])
    }
  })

  it('a store does not serialize a sealed payload again; its rows hold the same text', async () => {
    const path = freshPath(dir, 'rows.db')
    const raw = sqliteStore({ path })
    const store = codecStore(raw, codec)
    const stringify = vi.spyOn(JSON, 'stringify')
    await store.append('r1', batch, { expectedSeq: 0 })
    await store.append('r1', lone, { expectedSeq: 3 })
    // No call serialized a sealed value (a batch, a seal, attributes beside one); a pointer
    // (`{ $inBatch }`) is a few bytes, serialized as any payload.
    const sealedArgs = stringify.mock.calls.filter(
      ([value]) =>
        typeof value === 'object' &&
        value !== null &&
        Object.keys(value).some((k) => ['$batch', '$codec', '$sealed'].includes(k)),
    )
    stringify.mockRestore()
    expect(sealedArgs).toEqual([])
    expect(await store.read('r1')).toEqual([...batch, ...lone])
    await raw.close?.()

    const db = new Database(path, { readonly: true })
    const rows = db.prepare('SELECT seq, payload FROM skein_events ORDER BY seq').all() as Array<{
      seq: number
      payload: string
    }>
    db.close()
    const stored = [...encodeEvents(codec, batch), ...encodeEvents(codec, lone)]
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4])
    // Same shape as JSON.stringify writes (the IVs differ between two seals, so compare keys).
    for (const [i, row] of rows.entries()) {
      const parsed = JSON.parse(row.payload)
      expect(JSON.stringify(parsed)).toBe(row.payload)
      expect(Object.keys(parsed)).toEqual(Object.keys(stored[i]?.payload as object))
    }
    expect(rows.map((r) => r.payload).join('')).not.toContain('secret')
  })

  it('the memory store keeps the sealed values as they are', async () => {
    const raw = memoryStore()
    await codecStore(raw, codec).append('r1', batch, { expectedSeq: 0 })
    const stored = await raw.read('r1')
    expect(JSON.stringify(stored)).not.toContain('secret')
    expect(decodeEvents(codec, stored)).toEqual(batch)
  })
})
