import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type ArchiveSink,
  defineEffect,
  defineModule,
  type Engine,
  type EngineOptions,
} from 'skein'
import { natsArchive, natsReplica, readNatsArchive } from 'skein/nats'
import { sqliteStore } from 'skein/sqlite'
import { manualClock } from 'skein/testing'
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
import { untilSwept } from '../support/swept.js'

// The JetStream archive sink (docs/data-lifecycle.md, "Archives") against the machine's NATS
// server: each test its own stream, deleted after.

const newEngine = enginesStoppedAfterEach()
const streams: string[] = []
const closers: Array<() => Promise<void>> = []
const dir = mkdtempSync(join(tmpdir(), 'skein-nats-archive-'))
let files = 0
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
  await deleteStreams(streams.splice(0))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const fx = defineModule({
  namespace: 'na',
  effects: { echo: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n * 2 }) },
})
const chain = defineWorkflow({
  name: 'chain',
  nodes: {
    a: { run: (ctx) => ctx.invoke('na.echo', { n: 1 }) },
    b: { after: ['a'], run: (ctx) => ({ done: ctx.results.a }) },
  },
})
const modules = [workflow({ definitions: [chain] }), fx]

const until = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('never happened')
}

function streamFor(label: string) {
  const stream = streamName(label)
  streams.push(stream)
  return stream
}

function sinkFor(stream: string, extra: { duplicateWindowMs?: number } = {}) {
  const sink = natsArchive({ servers: NATS_URL, stream, ...extra })
  closers.push(() => sink.close())
  return sink
}

function engineWith(archive: ArchiveSink, extra: Partial<EngineOptions> = {}) {
  const clock = manualClock()
  const engine = newEngine({
    store: sqliteStore({ path: join(dir, `${++files}.db`) }),
    modules,
    clock,
    retention: { finishedAfterMs: 60_000, batchSize: 7, intervalMs: 1000, archive },
    ...extra,
  })
  return { engine, clock }
}

async function startMany(engine: Engine, n: number, prefix: string) {
  const logs = new Map<string, unknown>()
  for (let i = 0; i < n; i++) {
    const runId = `${prefix}-${i}`
    await engine.start(chain, undefined, { runId, wait: 'settled' })
    logs.set(runId, await engine.getEvents(runId))
  }
  return logs
}

const eventsIn = (logs: Map<string, unknown>) =>
  [...logs.values()].reduce((n: number, events) => n + (events as unknown[]).length, 0)

if (natsAvailable('test/nats/nats-archive.test.ts')) {
  describe('natsArchive', () => {
    it('archives runs before retention deletes them; the stream restores each log as it was', async () => {
      const stream = streamFor('archive')
      const { engine, clock } = engineWith(sinkFor(stream))
      const logs = await startMany(engine, 20, 'run')
      await clock.advance(61_000)
      await untilSwept(engine, clock, 20)
      expect(await streamMessages(stream)).toBe(eventsIn(logs))

      const runs = await readNatsArchive({ servers: NATS_URL, stream })
      expect(runs.map((r) => r.runId).sort()).toEqual([...logs.keys()].sort())
      for (const run of runs) expect((await engine.restoreRun(run)).restored).toBe(true)
      for (const [runId, events] of logs) expect(await engine.getEvents(runId)).toEqual(events)
      const [one] = await readNatsArchive({ servers: NATS_URL, stream }, 'run-3')
      expect(one.events).toEqual(logs.get('run-3'))
    })

    it('a run written again (a sweep resumed after a crash) is stored once, past the duplicate window', async () => {
      const stream = streamFor('again')
      const sink = sinkFor(stream, { duplicateWindowMs: 100 })
      let crash = true
      const crashing: ArchiveSink = {
        name: 'crashing',
        async write(runs) {
          await sink.write(runs)
          // Past JetStream's duplicate window: only the sink's own check keeps a copy out.
          await new Promise((r) => setTimeout(r, 300))
          if (crash) throw new Error('killed after archiving')
        },
      }
      const { engine, clock } = engineWith(crashing)
      const logs = await startMany(engine, 5, 'again')
      await clock.advance(61_000)
      await untilSwept(engine, clock, (s) => s.lastSweep?.error !== undefined)
      expect((await engine.getRun('again-0')).status).toBe('completed')
      crash = false
      await clock.advance(1000)
      await untilSwept(engine, clock, 5)
      expect(await streamMessages(stream)).toBe(eventsIn(logs))
      expect((await readNatsArchive({ servers: NATS_URL, stream })).length).toBe(5)
    })

    it('a run the replica already holds counts as archived: nothing is sent again', async () => {
      const stream = streamFor('replica')
      const replica = natsReplica({ servers: NATS_URL, stream })
      closers.push(() => replica.close())
      const { engine, clock } = engineWith(sinkFor(stream), {
        projectors: [replica],
        projectorOptions: { pollMs: 20 },
      })
      const logs = await startMany(engine, 6, 'rep')
      // The projector polls on the engine's (manual) clock.
      await until(async () => {
        await clock.advance(50)
        return (await streamMessages(stream).catch(() => 0)) === eventsIn(logs)
      })
      // Past the replica's duplicate window nothing would drop a second copy: none is sent.
      await clock.advance(61_000)
      await untilSwept(engine, clock, 6)
      expect(await streamMessages(stream)).toBe(eventsIn(logs))
    })

    it('a log trimmed behind a snapshot comes back from the stream with its snapshot, head, state and replay', async () => {
      const stream = streamFor('trimmed')
      const store = sqliteStore({ path: join(dir, `${++files}.db`) })
      const { engine, clock } = engineWith(sinkFor(stream), {
        store,
        snapshotEvery: 2,
        trimAfterSnapshot: { keepSnapshots: 2 },
      })
      const originals = new Map<string, unknown>()
      for (let i = 0; i < 3; i++) {
        const runId = `trim-${i}`
        await engine.start(chain, undefined, { runId, wait: 'settled' })
        const bounds = await store.bounds(runId)
        expect(bounds.head).toBeGreaterThan(1)
        originals.set(runId, {
          bounds,
          events: await engine.getEvents(runId),
          snapshot: await store.snapshots.latest(runId, bounds.head - 1),
          state: await engine.getRun(runId),
          replay: await engine.replayTo(runId, bounds.tail),
        })
      }
      await clock.advance(61_000)
      await untilSwept(engine, clock, 3)
      const runs = await readNatsArchive({ servers: NATS_URL, stream })
      for (const run of runs) expect((await engine.restoreRun(run)).restored).toBe(true)
      for (const [runId, original] of originals) {
        const bounds = await store.bounds(runId)
        expect({
          bounds,
          events: await engine.getEvents(runId),
          snapshot: await store.snapshots.latest(runId, bounds.head - 1),
          state: await engine.getRun(runId),
          replay: await engine.replayTo(runId, bounds.tail),
        }).toEqual(original)
      }
    })

    it('a run id used again after deletion: the stream gives back the latest run', async () => {
      const stream = streamFor('reuse')
      const { engine, clock } = engineWith(sinkFor(stream))
      await startMany(engine, 1, 'same')
      await clock.advance(61_000)
      await untilSwept(engine, clock, 1)
      const again = await startMany(engine, 1, 'same')
      await clock.advance(61_000)
      await untilSwept(engine, clock, 2)
      const [run] = await readNatsArchive({ servers: NATS_URL, stream }, 'same-0')
      expect(run.events).toEqual(again.get('same-0'))
    })
  })
}
