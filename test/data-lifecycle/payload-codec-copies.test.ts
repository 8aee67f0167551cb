import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import {
  type ArchivedRun,
  aesGcmCodec,
  defineEffect,
  defineInput,
  defineModule,
  jsonlArchive,
  readArchive,
} from 'skein'
import { natsReplica, readReplicatedLog } from 'skein/nats'
import { sqliteStore } from 'skein/sqlite'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { deleteStreams, NATS_URL, natsAvailable, streamName } from '../support/nats.js'
import { untilSwept } from '../support/swept.js'
import { freshPath } from '../support/temp-dirs.js'

// The copies of a store that leave it (docs/data-lifecycle.md, "Payloads encrypted at rest"):
// the NATS replica and the archive hold payloads as the store does, encoded; reading them back
// with the codec gives the run as it was.

const MARKER = 'ssn-078-05-1120-SECRET'
const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })

const dir = mkdtempSync(join(tmpdir(), 'skein-codec-copies-'))
const streams: string[] = []
const closers: Array<() => Promise<void>> = []
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await deleteStreams(streams)
})
const newEngine = enginesStoppedAfterEach()
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})
let files = 0
const freshFile = () => join(dir, `${++files}.db`)

const vault = defineModule({
  namespace: 'vault',
  events: { go: defineInput(z.object({ note: z.string() })) },
  effects: {
    keep: defineEffect({ execute: async (input: { ssn: string }) => ({ kept: input.ssn }) }),
  },
})
const intake = defineWorkflow({
  name: 'intake',
  nodes: {
    keep: { run: (ctx) => ctx.invoke('vault.keep', { ssn: MARKER }) },
    go: { after: ['keep'], run: (ctx) => ctx.waitFor('vault.go') },
  },
})
const modules = [vault, workflow({ definitions: [intake] })]

const until = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 3000; i++) {
    // A check that throws (a stream not created yet) is tried again.
    if (await check().catch(() => false)) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('never happened')
}

describe('payload codec: copies of the store', () => {
  it('the archive holds encoded payloads; a run restored from it reads as it was', async () => {
    const clock = manualClock()
    const archiveDir = freshPath(dir, 'archive')
    const engine = newEngine({
      store: sqliteStore({ path: freshFile() }),
      modules,
      codec,
      clock,
      retention: {
        finishedAfterMs: 60_000,
        intervalMs: 1000,
        archive: jsonlArchive({ dir: archiveDir }),
      },
    })
    await engine.start(intake, undefined, { runId: 'kept-1', wait: 'settled' })
    await engine.signal('kept-1', [{ type: 'vault.go', payload: { note: MARKER } }], {
      wait: 'settled',
    })
    const original = await engine.getEvents('kept-1')
    expect(JSON.stringify(original)).toContain(MARKER)
    await clock.advance(61_000)
    await untilSwept(engine, clock, 1)

    const paths = readdirSync(archiveDir, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => join(d.parentPath, d.name))
    expect(paths).toHaveLength(1)
    const raw = gunzipSync(readFileSync(paths[0])).toString('utf8')
    expect(raw).toContain('kept-1')
    expect(raw).toContain('aes-256-gcm')
    expect(raw.includes(MARKER)).toBe(false)

    const runs: ArchivedRun[] = []
    for await (const run of readArchive(paths[0])) runs.push(run)
    const restoring = newEngine({ store: sqliteStore({ path: freshFile() }), modules, codec })
    expect(await restoring.restoreRun(runs[0])).toMatchObject({ restored: true })
    expect(await restoring.getEvents('kept-1')).toEqual(original)
  })

  if (natsAvailable('payload-codec-copies')) {
    it('the NATS replica holds encoded payloads; readReplicatedLog with the codec decodes them', async () => {
      const stream = streamName('codec')
      streams.push(stream)
      const replica = natsReplica({ servers: NATS_URL, stream })
      closers.push(() => replica.close())
      const engine = newEngine({
        store: sqliteStore({ path: freshFile() }),
        modules,
        codec,
        projectors: [replica],
        projectorOptions: { pollMs: 10 },
      })
      await engine.start(intake, undefined, { runId: 'replicated-1', wait: 'settled' })
      await engine.signal('replicated-1', [{ type: 'vault.go', payload: { note: MARKER } }], {
        wait: 'settled',
      })
      const original = await engine.getEvents('replicated-1')
      const options = { servers: NATS_URL, stream }
      await until(
        async () => (await readReplicatedLog(options, 'replicated-1')).length === original.length,
      )

      // Without the codec: the messages as JetStream stores them.
      const stored = await readReplicatedLog(options, 'replicated-1')
      expect(JSON.stringify(stored)).toContain('aes-256-gcm')
      expect(JSON.stringify(stored).includes(MARKER)).toBe(false)
      expect(await readReplicatedLog({ ...options, codec }, 'replicated-1')).toEqual(original)
    })
  }
})
