import { fileURLToPath } from 'node:url'
import {
  type ArchivedRun,
  bearerAuth,
  defineEffect,
  defineInput,
  defineModule,
  type Engine,
  type EventStore,
  jsonlArchive,
  readArchive,
} from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { storeKinds } from '../support/store-kinds.js'
import { untilSwept } from '../support/swept.js'
import { tempDirs } from '../support/temp-dirs.js'

// A run started and signalled with idempotency keys, archived, deleted and restored, answers a
// retry with those keys as it did before it was deleted (docs/data-lifecycle.md, "Restoring"):
// the engine (its fold's keys come back with the events) and the store (its key rows, which an
// append from another process meets) alike, restored in process and over HTTP. An archive
// written before archives carried keys (format 1) restores as it did.

const kinds = storeKinds('archive-keys')
const newEngine = enginesStoppedAfterEach()
const { fresh: freshDir } = tempDirs('skein-archive-keys-')

const fx = defineModule({
  namespace: 'ik',
  events: { go: defineInput(z.object({ n: z.number() })) },
  effects: { step: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n * 2 }) },
})
const job = defineWorkflow({
  name: 'keyed',
  nodes: {
    a: { run: (ctx) => ctx.invoke('ik.step', { n: 21 }) },
    w: { after: ['a'], run: (ctx) => ctx.waitFor('ik.go') },
  },
})
const modules = [fx, workflow({ definitions: [job] })]

const until = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 3000; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('never happened')
}

/** What a keyed start and a keyed signal answer for the run. */
async function retries(engine: Engine, key: string, runId: string) {
  const started = await engine.start(job, { x: 1 }, { idempotencyKey: key })
  const named = await engine.start(
    job,
    { x: 2 },
    { runId: `${runId}-named`, idempotencyKey: `${key}-n` },
  )
  const signalled = await engine.signal(runId, [{ type: 'ik.go', payload: { n: 1 } }], {
    idempotencyKey: `${key}-s`,
  })
  return {
    started: [started.runId, started.state.status, started.state.lastSeq],
    named: [named.runId, named.state.status, named.state.lastSeq],
    signalled: [signalled.status, signalled.lastSeq],
  }
}

/** What the store answers to an append under `key` at the run's tail (another process's retry). */
async function storeAnswer(store: EventStore, runId: string, key: string) {
  const tail = await store.tail(runId)
  const event = {
    id: `probe-${key}`,
    runId,
    seq: tail + 1,
    ts: 0,
    type: 'ik.go',
    payload: { n: 9 },
    threadId: null,
    origin: 'external' as const,
    idempotencyKey: key,
  }
  try {
    await store.append(runId, [event], { expectedSeq: tail, idempotencyKey: key })
    return 'appended'
  } catch (error) {
    return (error as { code?: string }).code
  }
}

const fixture = fileURLToPath(new URL('../fixtures/archive/format-1.jsonl.gz', import.meta.url))

describe.each(kinds)('idempotency keys of a restored run on $name', (kind) => {
  it('a retried keyed start and signal find the restored run as they found the original', async () => {
    const clock = manualClock()
    const archiveDir = freshDir()
    const store = kind.fresh().open()
    const engine = newEngine({
      store,
      modules,
      clock,
      authorize: bearerAuth({ operations: 'ops-token' }),
      retention: {
        finishedAfterMs: 60_000,
        intervalMs: 1000,
        archive: jsonlArchive({ dir: archiveDir }),
      },
    })
    const key = `k-${kind.name}`
    const { runId } = await engine.start(job, { x: 1 }, { idempotencyKey: key, wait: 'settled' })
    await engine.start(
      job,
      { x: 2 },
      { runId: `${runId}-named`, idempotencyKey: `${key}-n`, wait: 'settled' },
    )
    await engine.signal(runId, [{ type: 'ik.go', payload: { n: 1 } }], {
      idempotencyKey: `${key}-s`,
    })
    await engine.signal(`${runId}-named`, [{ type: 'ik.go', payload: { n: 1 } }])
    await until(async () => (await engine.getRun(runId)).status === 'completed')
    await until(async () => (await engine.getRun(`${runId}-named`)).status === 'completed')
    const before = await retries(engine, key, runId)
    const recorded: Array<[string, string]> = [
      [runId, key],
      [runId, `${key}-s`],
      [`${runId}-named`, `${key}-n`],
    ]
    for (const [run, k] of recorded)
      expect(await storeAnswer(store, run, k)).toBe('IDEMPOTENCY_CONFLICT')
    await clock.advance(61_000)
    await untilSwept(engine, clock, 2)
    const runs: ArchivedRun[] = []
    for await (const run of readArchive(archiveDir)) runs.push(run)
    expect(runs.every((r) => r.format === 2 && Array.isArray(r.keys))).toBe(true)
    const [first, second] = runs.sort((a, b) => a.runId.localeCompare(b.runId))
    expect(await engine.restoreRun(first)).toMatchObject({ restored: true })
    // The other over real HTTP, as `skein restore` sends it.
    const server = await engine.serve({ port: 0 })
    const response = await fetch(`${server.url}/operations/restore`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ops-token' },
      body: JSON.stringify({ run: second }),
    })
    expect(response.status).toBe(200)
    expect((await response.json()).restored).toMatchObject({ restored: true })
    expect(await retries(engine, key, runId)).toEqual(before)
    // The store's key rows are back: another process's retry of either append is refused.
    for (const [run, k] of recorded) {
      expect([k, await storeAnswer(store, run, k)]).toEqual([k, 'IDEMPOTENCY_CONFLICT'])
    }
  }, 60_000)

  it('restores an archive of format 1 (no keys) as before: the fold answers its keyed retries', async () => {
    const store = kind.fresh().open()
    const engine = newEngine({ store, modules })
    const read: ArchivedRun[] = []
    for await (const r of readArchive(fixture)) read.push(r)
    const [run] = read
    expect(run.format).toBe(1)
    expect(await engine.restoreRun(run)).toEqual({
      runId: 'format-1-run',
      tail: 15,
      status: 'completed',
      restored: true,
    })
    expect(await engine.getEvents('format-1-run')).toEqual(run.events)
    const again = await engine.start(
      job,
      { x: 1 },
      {
        runId: 'format-1-run',
        idempotencyKey: 'fixture-start',
      },
    )
    expect([again.state.status, again.state.lastSeq]).toEqual(['completed', 15])
    const signalled = await engine.signal('format-1-run', [{ type: 'ik.go', payload: { n: 1 } }], {
      idempotencyKey: 'fixture-signal',
    })
    expect(signalled.lastSeq).toBe(15)
    expect(await engine.restoreRun(run)).toMatchObject({ restored: false })
  })
})
