import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  aesGcmCodec,
  defineEffect,
  defineInput,
  defineModule,
  type EventStore,
  memoryStore,
  type PayloadCodec,
} from 'skein'
import { createEngineClient } from 'skein/client'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

// Payloads encrypted at rest (docs/data-lifecycle.md): with `createEngine({ codec })` readers see
// decoded payloads, and the store's raw bytes (SQLite file and WAL, Postgres rows) hold none of
// them; keys rotate; a payload the codec cannot decode fails the read by its key id.

/** Written into the input, an effect's input and result, a signal and the output. */
const MARKER = 'card-4111-1111-SECRET'

const dir = mkdtempSync(join(tmpdir(), 'skein-codec-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const opened: EventStore[] = []
const newEngine = enginesStoppedAfterEach()
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close?.()
})

const key1 = randomBytes(32)
const key2 = randomBytes(32)
const codecK1 = aesGcmCodec({ keys: { k1: key1 }, current: 'k1' })
const codecK1K2 = aesGcmCodec({ keys: { k1: key1, k2: key2.toString('base64') }, current: 'k2' })
const codecK2 = aesGcmCodec({ keys: { k2: key2 }, current: 'k2' })

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

interface Kind {
  name: string
  /** A store over the same storage each time it is called. */
  reopen(): EventStore
  /** The storage's raw text: files' bytes, every row of every table. */
  raw(): Promise<string>
}

function sqliteKind(): Kind {
  const file = join(dir, `runs-${Date.now()}-${Math.random().toString(36).slice(2)}.db`)
  return {
    name: 'sqlite',
    reopen() {
      const store = sqliteStore({ path: file })
      opened.push(store)
      return store
    },
    async raw() {
      return [file, `${file}-wal`]
        .filter((f) => existsSync(f))
        .map((f) => readFileSync(f).toString('latin1'))
        .join('\n')
    },
  }
}

const schemas = postgresAvailable('payload-codec') ? testSchemas('payload-codec') : undefined
function postgresKind(): Kind {
  const admin = schemas!.admin
  const schema = schemas!.next()
  return {
    name: 'postgres',
    reopen() {
      const store = postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 3 })
      opened.push(store)
      return store
    },
    async raw() {
      const { rows } = await admin.query(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`,
        [schema],
      )
      let text = ''
      for (const { table_name: table } of rows) {
        const dump = await admin.query(`SELECT t::text AS row FROM "${schema}"."${table}" t`)
        text += dump.rows.map((r) => r.row).join('\n')
      }
      return text
    },
  }
}

function memoryKind(): Kind {
  const store = memoryStore()
  return {
    name: 'memory',
    reopen: () => store,
    async raw() {
      const runs = await store.listRuns()
      const events = await Promise.all(runs.map((r) => store.read(r)))
      const snapshots = await Promise.all(
        runs.map(async (r) => store.snapshots?.latest(r, undefined, { readOnly: true })),
      )
      return JSON.stringify([events, snapshots])
    },
  }
}

const kinds: Array<() => Kind> = [memoryKind, sqliteKind]
if (schemas) kinds.push(postgresKind)

/** Runs checkout to the end: the marker is in every kind of payload the run records. */
async function runCheckout(engine: ReturnType<typeof newEngine>, runId: string) {
  await engine.start(checkout, { card: MARKER }, { runId, wait: 'settled' })
  await engine.signal(runId, [{ type: 'pay.confirm', payload: { note: MARKER } }], {
    wait: 'settled',
  })
  const state = await engine.getRun(runId)
  expect(state.status).toBe('completed')
  expect(state.output).toMatchObject({ done: { card: MARKER } })
}

const engineOn = (store: EventStore, codec?: PayloadCodec) =>
  newEngine({ store, modules, codec, snapshotEvery: 2, authorize: () => true })

describe.each(kinds.map((make) => ({ name: make().name, make })))(
  'payload codec on $name',
  ({ make }) => {
    it('readers see decoded payloads; the raw storage holds no plaintext', async () => {
      const kind = make()
      const engine = engineOn(kind.reopen(), codecK1)
      await runCheckout(engine, 'secret-1')

      const events = await engine.getEvents('secret-1')
      const text = JSON.stringify(events)
      expect(text).toContain(MARKER)
      for (const type of ['runtime.run.started', 'runtime.effect.requested', 'pay.confirm'])
        expect(JSON.stringify(events.find((e) => e.type === type)?.payload)).toContain(MARKER)
      const client = createEngineClient({
        baseUrl: 'http://skein.test',
        fetch: async (request) => (await engine.fetch(request)) as Response,
      })
      expect(JSON.stringify(await client.getEvents('secret-1'))).toContain(MARKER)
      expect((await client.getRun('secret-1')).state.output).toMatchObject({
        done: { card: MARKER },
      })
      await engine.stop()

      const raw = await kind.raw()
      expect(raw).toContain('secret-1')
      expect(raw).toContain('aes-256-gcm')
      expect(raw.includes(MARKER)).toBe(false)

      // A restarted engine with the key folds the run from its encrypted snapshot and events.
      const again = engineOn(kind.reopen(), codecK1)
      expect((await again.getRun('secret-1')).output).toMatchObject({ done: { card: MARKER } })
    })

    it('the probe finds the plaintext of a run written without a codec', async () => {
      const kind = make()
      const engine = engineOn(kind.reopen())
      await runCheckout(engine, 'plain-1')
      await engine.stop()
      expect((await kind.raw()).includes(MARKER)).toBe(true)
    })

    it('keys rotate: runs under key 1 and key 2 both read; a missing key fails by its id', async () => {
      const kind = make()
      const first = engineOn(kind.reopen(), codecK1)
      await runCheckout(first, 'under-k1')
      await first.stop()

      const rotated = engineOn(kind.reopen(), codecK1K2)
      await runCheckout(rotated, 'under-k2')
      expect((await rotated.getRun('under-k1')).output).toMatchObject({ done: { card: MARKER } })
      expect((await rotated.getRun('under-k2')).output).toMatchObject({ done: { card: MARKER } })
      const store = await rotated.store
      await rotated.stop()
      const kids = async (runId: string) => {
        const inner = kind.reopen()
        // Key ids of every sealed value: per event, or on the last event of an appended batch.
        const found = new Set(
          (await inner.read(runId)).flatMap(
            (e) => JSON.stringify(e.payload).match(/"kid":"[^"]*"/g) ?? [],
          ),
        )
        return [...found]
      }
      expect(await kids('under-k1')).toEqual(['"kid":"k1"'])
      expect(await kids('under-k2')).toEqual(['"kid":"k2"'])
      expect(store).toBeDefined()

      // Key 1 dropped: its run fails to read with an error naming it; the other still reads.
      const before = JSON.stringify(await kind.reopen().read('under-k1'))
      const dropped = engineOn(kind.reopen(), codecK2)
      expect((await dropped.getRun('under-k2')).output).toMatchObject({ done: { card: MARKER } })
      const failure = await dropped.getEvents('under-k1').then(
        () => null,
        (error) => error,
      )
      expect(failure).toMatchObject({
        code: 'PAYLOAD_UNDECODABLE',
        details: { runId: 'under-k1', part: 'event', keyId: 'k1' },
      })
      expect(failure.message).toContain('k1')
      const response = (await dropped.fetch(
        new Request('http://skein.test/runs/under-k1/events'),
      )) as Response
      expect(response.status).toBe(500)
      const body = await response.json()
      expect(body.error.code).toBe('PAYLOAD_UNDECODABLE')
      expect(body.error.message).toContain('key id k1')
      // Nothing was rewritten.
      expect(JSON.stringify(await kind.reopen().read('under-k1'))).toBe(before)
    })
  },
)

describe('aesGcmCodec', () => {
  const context = { part: 'event' as const, runId: 'r', id: '1' }

  it('round-trips JSON values, each sealed with a fresh IV under the current key id', () => {
    for (const value of [null, 0, 'text', [1, { a: true }], { nested: { deep: ['x'] } }]) {
      const stored = codecK1.encode(value, context)
      expect(stored).toMatchObject({ $codec: 'aes-256-gcm', kid: 'k1' })
      expect(codecK1.encoded(stored)).toBe(true)
      expect(codecK1.decode(stored, context)).toEqual(value)
    }
    expect(codecK1.encode('same', context)).not.toEqual(codecK1.encode('same', context))
    // A value the codec never wrote (written before the codec was on) reads as it is.
    expect(codecK1.encoded({ card: 'x' })).toBe(false)
    expect(codecK1.decode({ card: 'x' }, context)).toEqual({ card: 'x' })
  })

  it('refuses data moved to another event, altered, or sealed with a different key under the id', () => {
    const stored = codecK1.encode({ card: MARKER }, context) as { data: string }
    expect(() => codecK1.decode(stored, { ...context, id: '2' })).toThrow(/authentication failed/)
    expect(() => codecK1.decode(stored, { ...context, runId: 'other' })).toThrow(
      expect.objectContaining({ code: 'PAYLOAD_UNDECODABLE' }),
    )
    const bytes = Buffer.from(stored.data, 'base64')
    bytes[bytes.length - 1] ^= 1
    expect(() => codecK1.decode({ ...stored, data: bytes.toString('base64') }, context)).toThrow(
      /authentication failed under key k1/,
    )
    const impostor = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })
    expect(() => impostor.decode(stored, context)).toThrow(/authentication failed under key k1/)
    expect(() => codecK1.decode({ ...stored, data: 'AAAA' }, context)).toThrow(/truncated/)
  })

  it('refuses bad options at creation', () => {
    expect(() => aesGcmCodec({ keys: { k1: randomBytes(16) }, current: 'k1' })).toThrow(
      /16 bytes; AES-256 takes 32/,
    )
    expect(() => aesGcmCodec({ keys: { k1: key1 }, current: 'k9' })).toThrow(
      /current key id "k9" is not among keys \(k1\)/,
    )
    expect(() => aesGcmCodec({ keys: { 'bad id': key1 }, current: 'bad id' })).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST' }),
    )
  })
})
