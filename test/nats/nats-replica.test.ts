import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { defineEffect, defineModule, type EventEnvelope, type EventStore } from 'skein'
import { natsReplica, readReplicatedLog, readReplicatedLogs, runSubject } from 'skein/nats'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'
import {
  deleteStreams,
  NATS_URL,
  natsAvailable,
  streamMessages,
  streamName,
} from '../support/nats.js'

// The replica against the machine's NATS server with JetStream: each test its own stream,
// deleted after. The first test runs it as the engine's projector; the others hand it batches
// themselves, as the projector runtime may (again after a crash, overlapping), to pin down
// what JetStream's deduplication and the reader make of them.

const newEngine = enginesStoppedAfterEach()
const streams: string[] = []
const closers: Array<() => Promise<void>> = []
const dirs: string[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
  await deleteStreams(streams.splice(0))
})
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const fx = defineModule({
  namespace: 'fx',
  effects: { echo: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n * 2 }) },
})
const chain = defineWorkflow({
  name: 'chain',
  nodes: {
    a: { run: (ctx) => ctx.invoke('fx.echo', { n: 1 }) },
    b: { after: ['a'], run: (ctx) => ctx.invoke('fx.echo', { n: ctx.results.a as number }) },
    c: { after: ['b'], run: (ctx) => ({ done: ctx.results.b }) },
  },
})

function replicaFor(label: string, extra: { subject?: string } = {}) {
  const stream = streamName(label)
  streams.push(stream)
  const replica = natsReplica({ servers: NATS_URL, stream, ...extra })
  closers.push(() => replica.close())
  return replica
}

async function sqliteEngine() {
  const dir = mkdtempSync(join(tmpdir(), 'skein-nats-'))
  dirs.push(dir)
  const store = await sqliteStore({ path: join(dir, 'runs.db') })
  const engine = newEngine({ store, modules: [workflow({ definitions: [chain] }), fx] })
  return { engine, store }
}

const ctx = (projector: string, attempt = 1) => ({
  projector,
  attempt,
  signal: new AbortController().signal,
})

async function until(probe: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function readAll(store: EventStore, runId: string): Promise<EventEnvelope[]> {
  return store.read(runId, { fromSeq: 1, limit: 100_000 })
}

if (natsAvailable('test/nats/nats-replica.test.ts')) {
  describe('natsReplica', () => {
    it('registered on the engine, replicates every run as it commits: the stream rebuilds each log byte for byte', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'skein-nats-'))
      dirs.push(dir)
      const store = await sqliteStore({ path: join(dir, 'runs.db') })
      const replica = replicaFor('engine')
      const engine = newEngine({
        store,
        modules: [workflow({ definitions: [chain] }), fx],
        projectors: [replica],
        projectorOptions: { pollMs: 20 },
      })
      const runIds: string[] = []
      for (let i = 0; i < 8; i++) runIds.push((await engine.start(chain)).runId)
      await until(async () => {
        const [status] = await engine.projectors()
        return status.name === replica.name && status.lagEvents === 0 && status.position > 0
      }, 'the replica to catch up')
      const rebuilt = await readReplicatedLogs({ servers: NATS_URL, stream: replica.stream })
      let total = 0
      for (const runId of runIds) {
        const source = await readAll(store, runId)
        total += source.length
        expect(JSON.stringify(rebuilt.get(runId))).toBe(JSON.stringify(source))
      }
      expect(await streamMessages(replica.stream)).toBe(total)
    })

    it('publishes each run in order; a log rebuilt from the stream is byte-equal to the source', async () => {
      const { engine, store } = await sqliteEngine()
      const replica = replicaFor('order')
      const runIds: string[] = []
      for (let i = 0; i < 5; i++) runIds.push((await engine.start(chain)).runId)
      let total = 0
      for (const runId of runIds) {
        const events = await readAll(store, runId)
        expect(events.length).toBeGreaterThan(5)
        total += events.length
        // Two batches, as a projector would deliver a run that moved twice.
        const half = Math.ceil(events.length / 2)
        await replica.handle({ runId, events: events.slice(0, half) }, ctx(replica.name))
        await replica.handle({ runId, events: events.slice(half) }, ctx(replica.name))
      }
      // As the projector runtime does at the end of a round: wait for every acknowledgement.
      await replica.flush(ctx(replica.name))
      for (const runId of runIds) {
        const source = JSON.stringify(await readAll(store, runId))
        expect(
          JSON.stringify(
            await readReplicatedLog({ servers: NATS_URL, stream: replica.stream }, runId),
          ),
        ).toBe(source)
      }
      const all = await readReplicatedLogs({ servers: NATS_URL, stream: replica.stream })
      expect([...all.keys()].sort()).toEqual([...runIds].sort())
      expect(await streamMessages(replica.stream)).toBe(total)
    })

    it('a batch delivered again (at-least-once) adds no message: JetStream drops the runId:seq duplicates', async () => {
      const { engine, store } = await sqliteEngine()
      const replica = replicaFor('dedup')
      const { runId } = await engine.start(chain)
      const events = await readAll(store, runId)
      await replica.handle({ runId, events: events.slice(0, 4) }, ctx(replica.name))
      await replica.flush(ctx(replica.name))
      // A crash before the checkpoint moved: the same batch again, then an overlapping one.
      await replica.handle({ runId, events: events.slice(0, 4) }, ctx(replica.name, 2))
      await replica.handle({ runId, events: events.slice(2) }, ctx(replica.name))
      await replica.flush(ctx(replica.name))
      expect(await streamMessages(replica.stream)).toBe(events.length)
      const rebuilt = await readReplicatedLog({ servers: NATS_URL, stream: replica.stream }, runId)
      expect(JSON.stringify(rebuilt)).toBe(JSON.stringify(events))
    })

    it('run ids with dots (not one subject token) are encoded, never mixed up', async () => {
      const { engine, store } = await sqliteEngine()
      const replica = replicaFor('ids')
      const ids = ['order.42', 'order:42', 'v1.2.3', 'plain-id_1']
      for (const runId of ids) await engine.start(chain, undefined, { runId })
      for (const runId of ids)
        await replica.handle({ runId, events: await readAll(store, runId) }, ctx(replica.name))
      await replica.flush(ctx(replica.name))
      expect(new Set(ids.map((id) => runSubject('s', id))).size).toBe(ids.length)
      expect(runSubject('s', 'plain-id_1')).toBe('s.plain-id_1')
      expect(runSubject('s', 'order:42')).toBe('s.order:42')
      expect(runSubject('s', 'order.42')).toMatch(/^s\.~[A-Za-z0-9_-]+$/)
      for (const runId of ids) {
        const rebuilt = await readReplicatedLog(
          { servers: NATS_URL, stream: replica.stream },
          runId,
        )
        expect(JSON.stringify(rebuilt)).toBe(JSON.stringify(await readAll(store, runId)))
      }
      expect(
        await readReplicatedLog({ servers: NATS_URL, stream: replica.stream }, 'nobody'),
      ).toEqual([])
    })

    it('a publish that fails surfaces in flush (the runtime then delivers the round again)', async () => {
      const { engine, store } = await sqliteEngine()
      const replica = replicaFor('fail')
      const { runId } = await engine.start(chain)
      const events = await readAll(store, runId)
      await replica.handle({ runId, events: events.slice(0, 3) }, ctx(replica.name))
      await replica.flush(ctx(replica.name))
      // The stream goes away under the replica: its next messages have nowhere to go.
      await deleteStreams([replica.stream])
      await replica.handle({ runId, events: events.slice(3) }, ctx(replica.name))
      await expect(replica.flush(ctx(replica.name))).rejects.toThrow()
      // The failure was reported once; a later round that succeeds flushes cleanly.
      await replica.flush(ctx(replica.name))
    })

    it('creates a missing stream with a duplicate window, and refuses one that does not capture its subject', async () => {
      const replica = replicaFor('create')
      const nc = await connect({ servers: NATS_URL })
      try {
        const jsm = await jetstreamManager(nc)
        await replica.handle(
          {
            runId: 'r1',
            events: [
              {
                id: 'e1',
                runId: 'r1',
                seq: 1,
                ts: 1,
                type: 't',
                payload: null,
                threadId: null,
                origin: 'external',
              },
            ],
          },
          ctx(replica.name),
        )
        const info = await jsm.streams.info(replica.stream)
        expect(info.config.subjects).toEqual([`skein.${replica.stream}.>`])
        expect(info.config.duplicate_window).toBe(120_000 * 1_000_000)

        const other = streamName('foreign')
        streams.push(other)
        await jsm.streams.add({ name: other, subjects: [`elsewhere.${other}.>`] })
        const wrong = natsReplica({ servers: NATS_URL, stream: other })
        closers.push(() => wrong.close())
        await expect(wrong.handle({ runId: 'r1', events: [] }, ctx(wrong.name))).rejects.toThrow(
          /captures .* not "skein\./,
        )
      } finally {
        await nc.close()
      }
    })
  })
}
