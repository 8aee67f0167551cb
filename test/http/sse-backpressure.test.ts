import { connect, type Socket } from 'node:net'
import { createEngine } from 'skein'
import { afterEach, describe, expect, it } from 'vitest'
import type { HandlerOptions } from '../../src/http/route-types.js'
import { serveHandler } from '../../src/http/server.js'
import type { Engine, ServerHandle } from '../../src/runtime/engine-types.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { appendRaw, countingStore, idsOf, makeHandler, manualTimers, sseReader } from './helpers.js'
import { realEngine, START_RELEASE } from './real-engine.js'

// In-process with the drain deadline on a manual timer: catch-up pages are sized
// by bytes, a consumer that stops reading holds one page and is dropped when its deadline
// passes (not before), a consumer that drains in time keeps its stream, and the streams
// together stay within their byte budget. Sockets are real; only time is the test's.

const KIB = 1024
const EVENT_BYTES = 64 * KIB
/** 4 events of the largest size per page. */
const PAGE_BYTES = 4 * EVENT_BYTES
const EVENTS = 300

const servers: ServerHandle[] = []
const sockets: Socket[] = []
const engines: Engine[] = []
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy()
  await Promise.all(servers.splice(0).map((s) => s.close()))
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

/** A real engine (its store's subscriptions counted) with run r1 parked on its gate. */
async function parkedEngine() {
  const { engine, store } = realEngine({ store: countingStore(memoryStore()) })
  engines.push(engine)
  await engine.startRun({ ...START_RELEASE, runId: 'r1' })
  return { engine, store, subscriptions: store.subscriptions }
}

async function setup(sse: HandlerOptions['sse'] = {}) {
  const { engine: real, store, subscriptions } = await parkedEngine()
  const timers = manualTimers()
  const reads: number[] = []
  let opened = 0
  // The handler sees the real engine, its subscriptions and reads counted.
  const engine: Engine = {
    ...real,
    subscribe(runId, listener) {
      opened++
      return real.subscribe(runId, listener)
    },
    getEvents(runId, options) {
      reads.push(options?.limit ?? Number.POSITIVE_INFINITY)
      return real.getEvents(runId, options)
    },
  }
  const http = makeHandler(engine, {
    maxEventBytes: EVENT_BYTES,
    sse: { timers, pageBytes: PAGE_BYTES, ...sse },
  })
  // ~19 MB of frames: more than the kernel's socket buffers take from a client that stops.
  const blob = 'x'.repeat(EVENT_BYTES - 200)
  for (let i = 0; i < EVENTS; i += 50) {
    await appendRaw(
      store,
      'r1',
      Array.from({ length: 50 }, (_, j) => `big.${i + j}`),
      { blob },
    )
  }
  const server = await serveHandler(async (r) => (await http.fetch(r))!, {
    port: 0,
    closeStreams: http.closeStreams,
  })
  servers.push(server)
  return {
    store,
    subscriptions,
    timers,
    reads,
    server,
    tail: await store.tail('r1'),
    opened: () => opened,
  }
}

/** A raw subscriber; `pause()` stops reading from the socket, so the server's writes back up. */
function subscriber(server: ServerHandle, headers: Record<string, string> = {}) {
  const socket = connect(server.port, '127.0.0.1')
  sockets.push(socket)
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`)
  socket.write(
    `GET /runs/r1/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n${extra.join('')}\r\n`,
  )
  socket.setEncoding('latin1')
  let text = ''
  let closed = false
  socket.on('data', (chunk: string) => {
    text += chunk
  })
  socket.on('close', () => {
    closed = true
  })
  return {
    socket,
    get closed() {
      return closed
    },
    /** Ids of whole frames received (a dropped stream may end mid-frame). */
    ids: () => idsOf(text.split('\n\n').slice(0, -1).join('\n\n')),
  }
}

const turns = async (n = 20) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
}
const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe('SSE memory over real sockets', () => {
  it('reads catch-up pages sized by bytes, and none while the consumer has not drained', async () => {
    const { subscriptions, timers, reads, server, tail } = await setup()
    const slow = subscriber(server)
    slow.socket.pause()
    // The consumer stops taking frames: the stream falls behind and its deadline is armed.
    await expect.poll(() => timers.pending, { timeout: 20_000 }).toBe(1)
    await turns()
    const readsWhileStalled = reads.length
    await turns(50)
    expect(reads.length).toBe(readsWhileStalled)
    expect(readsWhileStalled).toBeLessThan(EVENTS / 4)
    expect(subscriptions.active).toBe(1)
    // Every store read asked for what PAGE_BYTES holds of the largest events.
    expect(new Set(reads)).toEqual(new Set([PAGE_BYTES / EVENT_BYTES]))

    // It reads again: every event arrives, in order, and the deadline is off.
    slow.socket.resume()
    await expect.poll(() => slow.ids().length, { timeout: 20_000 }).toBe(tail)
    expect(slow.ids()).toEqual(range(1, tail))
    expect(timers.pending).toBe(0)
    expect(subscriptions.active).toBe(1)
  })

  it('drops a consumer that does not drain by its deadline; it resumes losing nothing', async () => {
    const { subscriptions, timers, server, tail } = await setup()
    const slow = subscriber(server)
    slow.socket.pause()
    await expect.poll(() => timers.pending, { timeout: 20_000 }).toBe(1)
    await turns(50)
    // Not before the deadline.
    expect(subscriptions.active).toBe(1)
    expect(slow.closed).toBe(false)
    timers.expire()
    expect(subscriptions.active).toBe(0)
    // What it was sent before the drop, then the close.
    slow.socket.resume()
    await expect.poll(() => slow.closed, { timeout: 20_000 }).toBe(true)
    const got = slow.ids()
    expect(got.length).toBeGreaterThan(0)
    expect(got.length).toBeLessThan(tail)
    expect(got).toEqual(range(1, got.length))

    const resumed = subscriber(server, { 'last-event-id': String(got.at(-1)) })
    await expect.poll(() => resumed.ids().at(-1), { timeout: 20_000 }).toBe(tail)
    expect([...got, ...resumed.ids()]).toEqual(range(1, tail))
  })

  it('keeps the streams together within maxTotalBufferedBytes by dropping those holding bytes', async () => {
    const budget = { maxTotalBufferedBytes: 2 * PAGE_BYTES }
    const { subscriptions, timers, server, tail, opened } = await setup(budget)
    const stalled = Array.from({ length: 4 }, () => subscriber(server))
    for (const s of stalled) s.socket.pause()
    // Each one that fills its socket holds about a page; past two pages the budget sheds them
    // without waiting for a deadline. Once all four have opened and every one left is behind
    // and waiting on its deadline, some have gone.
    await expect
      .poll(() => opened() === 4 && subscriptions.active === timers.pending, {
        timeout: 20_000,
      })
      .toBe(true)
    expect(subscriptions.active).toBeLessThan(4)
    expect(subscriptions.active).toBeGreaterThan(0)
    timers.expire()
    expect(subscriptions.active).toBe(0)
    // With the budget free again, a reader gets the whole run.
    const reader = subscriber(server)
    await expect.poll(() => reader.ids().length, { timeout: 20_000 }).toBe(tail)
  })

  it('drops a Web-stream reader that stops reading, on the same deadline', async () => {
    const { engine, store, subscriptions } = await parkedEngine()
    const timers = manualTimers()
    const http = makeHandler(engine, {
      maxEventBytes: EVENT_BYTES,
      sse: { timers, pageBytes: PAGE_BYTES },
    })
    await appendRaw(store, 'r1', ['a', 'b', 'c', 'd', 'e', 'f'], { blob: 'y'.repeat(1000) })
    const reader = sseReader((await http.fetch(new Request('http://x/runs/r1/events?live=true')))!)
    // One read starts the stream; the first page queues behind it unread.
    await reader.until((t) => t.includes(': connected'))
    await expect.poll(() => timers.pending).toBe(1)
    expect(subscriptions.active).toBe(1)
    timers.expire()
    expect(subscriptions.active).toBe(0)
    await expect(reader.rest()).rejects.toThrow(/dropped/)
  })

  it('drops a streaming start whose reader stops reading, on the same deadline', async () => {
    const { engine } = await parkedEngine()
    const timers = manualTimers()
    const http = makeHandler(engine, { sse: { timers } })
    const res = (await http.fetch(
      new Request('http://x/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ ...START_RELEASE, runId: 's1' }),
      }),
    ))!
    const reader = sseReader(res)
    await reader.until((t) => t.includes(': connected'))
    // The start's events and its done frame queue unread behind that one read.
    await expect.poll(() => timers.pending).toBe(1)
    timers.expire()
    await expect(reader.rest()).rejects.toThrow(/dropped/)
    // The run itself is unaffected: it parked as r1, started without a stream, did.
    expect(await engine.getRun('s1')).toMatchObject({
      status: 'running',
      lastSeq: (await engine.getRun('r1')).lastSeq,
    })
  })

  it('refuses SSE bounds that are not positive integers when the engine is created', () => {
    for (const sse of [{ drainTimeoutMs: 0 }, { pageBytes: 1.5 }, { maxTotalBufferedBytes: -1 }]) {
      expect(() => createEngine({ http: { sse } })).toThrow(
        /http\.sse\.\w+ must be a positive integer/,
      )
    }
  })
})
