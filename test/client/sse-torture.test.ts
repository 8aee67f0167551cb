import { afterEach, describe, expect, it } from 'vitest'
import { createEngineClient } from '../../src/client/index.js'
import { serveHandler } from '../../src/http/server.js'
import type { Engine, ServerHandle } from '../../src/runtime/engine-types.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { appendRaw, countingStore, makeHandler, manualTimers } from '../http/helpers.js'
import { realEngine, START_RELEASE } from '../http/real-engine.js'
import { cuttingFetch, immediateTimers, inProcess, prng } from './helpers.js'

const servers: ServerHandle[] = []
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

/**
 * Resume torture: connections are cut after a random number of bytes (often mid-frame) while a
 * writer appends in random batches. The subscriber must see exactly 1..n, each seq once.
 */
async function torture(mode: 'in-process' | 'socket', seed: number, n: number, minCuts: number) {
  const random = prng(seed)
  const { engine, store } = realEngine({ store: countingStore(memoryStore()) })
  engines.push(engine)
  const http = makeHandler(engine, { sse: { timers: manualTimers(), pageSize: 7 } })
  let base: (request: Request) => Promise<Response> = inProcess(http)
  let baseUrl = 'http://skein.local'
  if (mode === 'socket') {
    const server = await serveHandler(http.fetch, { port: 0, closeStreams: http.closeStreams })
    servers.push(server)
    baseUrl = server.url
    base = (request) => fetch(request)
  }
  const { fetch: cutting, stats } = cuttingFetch(base, random)
  const client = createEngineClient({ baseUrl, fetch: cutting, timers: immediateTimers(), random })

  // A real run parked on its gate; the rest of the log comes from another writer.
  const { state } = await engine.startRun({ ...START_RELEASE, runId: 't' })
  const seen: number[] = []
  let resolve!: () => void
  const done = new Promise<void>((r) => (resolve = r))
  const stop = client.subscribeEvents('t', (event) => {
    seen.push(event.seq)
    if (event.seq === n) resolve()
  })
  let appended = state.lastSeq
  while (appended < n) {
    const batch = Math.min(n - appended, 1 + Math.floor(random() * 4))
    await appendRaw(
      store,
      't',
      Array.from({ length: batch }, (_, i) => `e${appended + i}`),
    )
    appended += batch
    // Let the subscriber make progress (and be cut) between batches.
    if (random() < 0.5) await new Promise((r) => setImmediate(r))
  }
  await done
  stop()
  expect(seen).toEqual(Array.from({ length: n }, (_, i) => i + 1))
  expect(stats.cuts).toBeGreaterThanOrEqual(minCuts)
  await expect.poll(() => store.subscriptions.active).toBe(0)
  console.log(
    `SCORE sse-resume-torture mode=${mode} events=${n} disconnects=${stats.cuts} connects=${stats.connects} gaps=0 duplicates=0`,
  )
}

describe('SSE resume torture', () => {
  it('in-process: ≥200 forced disconnects, the client sees exactly 1..n', async () => {
    await torture('in-process', 7, 600, 200)
  })

  it('over a socket: ≥200 forced disconnects, the client sees exactly 1..n', async () => {
    await torture('socket', 11, 600, 200)
  })
})
