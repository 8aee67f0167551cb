import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  aesGcmCodec,
  decodeEvent,
  decodeEvents,
  defineEffect,
  defineModule,
  type EventEnvelope,
  type EventStore,
  memoryStore,
} from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { codecStore } from '../../src/runtime/codec-store.js'
import { enginesStoppedAfterEach } from '../support/engines.js'

// One seal per appended batch, kept on its last event (docs/data-lifecycle.md, "Payloads
// encrypted at rest"): every event of a run still reads on its own by seq, whether a page, a
// trim or the feed cuts its batch, and a batch or a pointer moved elsewhere fails to read.

const MARKER = 'iban-DE89-3704-SECRET'
const codec = aesGcmCodec({ keys: { k1: Buffer.alloc(32, 1) }, current: 'k1' })
const steps = defineModule({
  namespace: 'steps',
  effects: {
    step: defineEffect({ execute: async (input: { i: number }) => ({ i: input.i, note: MARKER }) }),
  },
})
const three = defineWorkflow({
  name: 'three',
  nodes: {
    s0: { run: (ctx) => ctx.invoke('steps.step', { i: 0 }) },
    s1: { after: ['s0'], run: (ctx) => ctx.invoke('steps.step', { i: 1 }) },
    s2: { after: ['s1'], run: (ctx) => ctx.invoke('steps.step', { i: 2 }) },
  },
})
const modules = [steps, workflow({ definitions: [three] })]

const dir = mkdtempSync(join(tmpdir(), 'skein-codec-batches-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const opened: EventStore[] = []
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close?.()
})
const newEngine = enginesStoppedAfterEach()

function sqliteFile(): EventStore {
  const store = sqliteStore({ path: join(dir, `b-${Math.random().toString(36).slice(2)}.db`) })
  opened.push(store)
  return store
}

/** A finished 3-step run: the raw store, the codec's view of it, and the decoded log. */
async function finishedRun(raw: EventStore) {
  const engine = newEngine({ store: raw, modules, codec })
  await engine.start(three, { customer: MARKER }, { runId: 'r1', wait: 'settled' })
  const decoded = await engine.getEvents('r1')
  return { engine, view: await engine.store, decoded, stored: await raw.read('r1') }
}

/** What a reader gets for one event: the decoded payload a full read gives for its seq. */
const bySeq = (events: readonly EventEnvelope[]) => new Map(events.map((e) => [e.seq, e.payload]))

describe('one seal per appended batch', () => {
  it('seals each append once on its last event; every event reads back, no plaintext stored', async () => {
    const raw = sqliteFile()
    const { decoded, stored } = await finishedRun(raw)
    expect(decoded.length).toBeGreaterThan(10)
    expect(JSON.stringify(decoded)).toContain(MARKER)
    expect(JSON.stringify(stored)).not.toContain(MARKER)
    const seals = stored.filter((e) => JSON.stringify(e.payload).includes('"kid":"k1"'))
    const pointers = stored.filter((e) => JSON.stringify(e.payload).includes('"$inBatch"'))
    expect(seals.length).toBeLessThan(stored.length / 2)
    expect(seals.length + pointers.length).toBe(stored.length)
    // A pointer names the last event of its batch, which holds the batch.
    for (const member of pointers) {
      const text = JSON.stringify(member.payload)
      const holder = Number(/"\$inBatch":(\d+)/.exec(text)?.[1])
      expect(holder).toBeGreaterThan(member.seq)
      expect(JSON.stringify(stored.find((e) => e.seq === holder)?.payload)).toContain('$batch')
    }
  })

  it('a page cut inside a batch reads the batch from its last event', async () => {
    const { view, decoded } = await finishedRun(sqliteFile())
    const want = bySeq(decoded)
    for (let from = 1; from <= decoded.length; from++) {
      const [one] = await view.read('r1', { fromSeq: from, limit: 1 })
      expect(one?.payload).toEqual(want.get(from))
    }
    const feed = view.feed
    expect(feed).toBeDefined()
    const page = await feed!.readAfter(0, 2)
    expect(page.map((entry) => entry.event.payload)).toEqual([want.get(1), want.get(2)])
  })

  it('trimming the oldest events of a batch leaves the rest readable', async () => {
    const { view, decoded } = await finishedRun(sqliteFile())
    const want = bySeq(decoded)
    expect(await view.trim!('r1', 3)).toBe(2)
    const rest = await view.read('r1')
    expect(rest[0]?.seq).toBe(3)
    for (const e of rest) expect(e.payload).toEqual(want.get(e.seq))
  })

  it('decodeEvents reads a raw log; decodeEvent refuses a batched event alone', async () => {
    const { decoded, stored } = await finishedRun(memoryStore())
    expect(decodeEvents(codec, stored)).toEqual(decoded)
    const member = stored.find((e) => JSON.stringify(e.payload).includes('$inBatch'))!
    expect(() => decodeEvent(codec, member)).toThrow(/sealed with its batch/)
  })

  it('a batch or a pointer moved to another place fails to read, naming what it needs', async () => {
    const { stored } = await finishedRun(memoryStore())
    const holders = stored.filter((e) => JSON.stringify(e.payload).includes('$batch'))
    expect(holders.length).toBeGreaterThan(1)
    const [h1, h2] = holders as [EventEnvelope, EventEnvelope]

    // The second batch's seal copied onto the first batch's last event: authentication fails.
    const swapped = stored.map((e) => (e.seq === h1.seq ? { ...e, payload: h2.payload } : e))
    const moved = expectFailure(() => decodeEvents(codec, swapped))
    expect(moved).toMatchObject({ code: 'PAYLOAD_UNDECODABLE', details: { keyId: 'k1' } })
    expect(moved.message).toContain('key k1')

    // A member of the first batch pointing at the second batch: not one of its events.
    const member = stored.find(
      (e) => e.seq < h1.seq && !JSON.stringify(e.payload).includes('attributes'),
    )!
    const repointed = stored.map((e) =>
      e.seq === member.seq ? { ...e, payload: { $inBatch: h2.seq } } : e,
    )
    expect(expectFailure(() => decodeEvents(codec, repointed))).toMatchObject({
      code: 'PAYLOAD_UNDECODABLE',
      details: { runId: 'r1', part: 'event', id: String(member.seq) },
    })

    // A batch whose last event is gone: the member says which one it needs.
    const orphan = stored.filter((e) => e.seq !== h1.seq)
    expect(expectFailure(() => decodeEvents(codec, orphan)).message).toContain(`seq ${h1.seq}`)

    // Without the key, the read names the key id, and nothing was rewritten.
    const raw = memoryStore()
    await raw.append('r1', stored, { expectedSeq: 0 })
    const other = aesGcmCodec({ keys: { k2: Buffer.alloc(32, 2) }, current: 'k2' })
    const engine = newEngine({ store: raw, modules, codec: other })
    const failure = await engine.getEvents('r1').then(
      () => null,
      (error) => error,
    )
    expect(failure).toMatchObject({ code: 'PAYLOAD_UNDECODABLE', details: { keyId: 'k1' } })
    expect(await raw.read('r1')).toEqual(stored)
  })
})

describe('a listener of another process on one SQLite file', () => {
  it('gets the events of each commit decoded, in order', async () => {
    const file = join(dir, `sub-${Math.random().toString(36).slice(2)}.db`)
    const writer = sqliteStore({ path: file })
    const reader = sqliteStore({ path: file, changePollMs: 5 })
    opened.push(writer, reader)
    const readerEngine = newEngine({ store: reader, modules, codec })
    const view = await readerEngine.store
    const got: EventEnvelope[] = []
    const off = view.subscribe!('r2', (events) => got.push(...events))
    try {
      const engine = newEngine({ store: writer, modules, codec })
      await engine.start(three, { customer: MARKER }, { runId: 'r2', wait: 'settled' })
      const decoded = await engine.getEvents('r2')
      await expect.poll(() => got.length, { timeout: 5000 }).toBe(decoded.length)
      expect(got).toEqual(decoded)
    } finally {
      off()
    }
  })
})

describe('a delivery cut inside a batch', () => {
  it('waits for the batch read from the store; later deliveries keep their order', async () => {
    const raw = memoryStore()
    // A store that hands its listeners each event of a commit on its own.
    const oneByOne: EventStore = Object.assign(Object.create(raw), {
      subscribe: (runId: string, listener: (events: readonly EventEnvelope[]) => void) =>
        raw.subscribe!(runId, (events) => {
          for (const e of events) listener([e])
        }),
    })
    const view = codecStore(oneByOne, codec)
    const got: EventEnvelope[] = []
    const off = view.subscribe!('r3', (events) => got.push(...events))
    const engine = newEngine({ store: raw, modules, codec })
    await engine.start(three, { customer: MARKER }, { runId: 'r3', wait: 'settled' })
    const decoded = await engine.getEvents('r3')
    await expect.poll(() => got.length, { timeout: 5000 }).toBe(decoded.length)
    off()
    expect(got).toEqual(decoded)
  })
})

function expectFailure(fn: () => unknown): Error & { code?: string } {
  try {
    fn()
  } catch (error) {
    return error as Error & { code?: string }
  }
  throw new Error('expected a failure')
}
