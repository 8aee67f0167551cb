import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  aesGcmCodec,
  defineEffect,
  defineInput,
  defineModule,
  type EventEnvelope,
  type EventStore,
  memoryStore,
} from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'

// Payloads the AES-GCM codec wrote before batch sealing (one seal per event:
// test/fixtures/codec/aes-gcm-v1.json, a checkout run waiting for its signal) keep decoding:
// the run reads, resumes and finishes, and what was stored is never rewritten
// (docs/data-lifecycle.md, "Payloads encrypted at rest").

interface Fixture {
  key: { id: string; hex: string }
  marker: string
  runId: string
  events: EventEnvelope[]
}
const fixture = JSON.parse(
  readFileSync(new URL('../fixtures/codec/aes-gcm-v1.json', import.meta.url), 'utf8'),
) as Fixture
const { marker: MARKER, runId } = fixture
const codec = aesGcmCodec({
  keys: { [fixture.key.id]: Buffer.from(fixture.key.hex, 'hex') },
  current: fixture.key.id,
})

const pay = defineModule({
  namespace: 'pay',
  events: { confirm: defineInput(z.object({ note: z.string() })) },
  effects: {
    charge: defineEffect({
      execute: async (input: { card: string }) => ({ charged: input.card }),
    }),
  },
})
const checkout = defineWorkflow({
  name: 'checkout',
  nodes: {
    charge: {
      run: (ctx) => ctx.invoke('pay.charge', { card: (ctx.input as { card: string }).card }),
    },
    confirm: { after: ['charge'], run: (ctx) => ctx.waitFor('pay.confirm') },
    done: { after: ['confirm'], run: (ctx) => ({ card: (ctx.input as { card: string }).card }) },
  },
})
const modules = [pay, workflow({ definitions: [checkout] })]

const dir = mkdtempSync(join(tmpdir(), 'skein-codec-v1-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const opened: EventStore[] = []
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close?.()
})
const newEngine = enginesStoppedAfterEach()

const kinds: Array<{ name: string; open(): EventStore }> = [
  { name: 'memory', open: () => memoryStore() },
  {
    name: 'sqlite',
    open() {
      const store = sqliteStore({ path: join(dir, `v1-${Math.random().toString(36).slice(2)}.db`) })
      opened.push(store)
      return store
    },
  },
]

describe.each(kinds)(
  'per-event AES-GCM payloads written before batch sealing, on $name',
  (kind) => {
    it('read, resume and finish under the key; the stored events are not rewritten', async () => {
      const store = kind.open()
      await store.append(runId, fixture.events, { expectedSeq: 0 })
      const before = JSON.stringify(await store.read(runId))
      expect(before.includes(MARKER)).toBe(false)

      const engine = newEngine({ store, modules, codec, authorize: () => true })
      const events = await engine.getEvents(runId)
      expect(events.map((e) => e.seq)).toEqual(fixture.events.map((e) => e.seq))
      expect(JSON.stringify(events[0]?.payload)).toContain(MARKER)
      expect(JSON.stringify(events.find((e) => e.type === 'runtime.effect.requested'))).toContain(
        MARKER,
      )

      await engine.signal(runId, [{ type: 'pay.confirm', payload: { note: MARKER } }], {
        wait: 'settled',
      })
      const state = await engine.getRun(runId)
      expect(state.status).toBe('completed')
      expect(state.output).toMatchObject({ done: { card: MARKER } })
      const all = await engine.getEvents(runId)
      expect(all.length).toBeGreaterThan(fixture.events.length)
      expect(JSON.stringify(all.find((e) => e.type === 'pay.confirm')?.payload)).toContain(MARKER)

      const stored = await store.read(runId)
      expect(JSON.stringify(stored.slice(0, fixture.events.length))).toBe(before)
      expect(JSON.stringify(stored).includes(MARKER)).toBe(false)
    })

    it('without the key, the read fails naming the key id', async () => {
      const store = kind.open()
      await store.append(runId, fixture.events, { expectedSeq: 0 })
      const other = aesGcmCodec({ keys: { other: Buffer.alloc(32, 7) }, current: 'other' })
      const engine = newEngine({ store, modules, codec: other, authorize: () => true })
      const failure = await engine.getEvents(runId).then(
        () => null,
        (error) => error,
      )
      expect(failure).toMatchObject({
        code: 'PAYLOAD_UNDECODABLE',
        details: { runId, part: 'event', keyId: fixture.key.id },
      })
    })
  },
)
