import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { serveHandler } from '../../src/http/server.js'
import type { Engine, ServerHandle } from '../../src/runtime/engine-types.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { countingStore, makeHandler, manualTimers } from './helpers.js'
import { realEngine, START_RELEASE } from './real-engine.js'

const servers: ServerHandle[] = []
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

/** The handler of a real engine with run r1 parked (`tail` events), served on a free port. */
async function setup(maxRequestBytes?: number) {
  const { engine, store } = realEngine({ store: countingStore(memoryStore()) })
  engines.push(engine)
  const { state } = await engine.startRun({ ...START_RELEASE, runId: 'r1' })
  const http = makeHandler(engine, {
    sse: { timers: manualTimers() },
    ...(maxRequestBytes ? { maxRequestBytes } : {}),
  })
  const server = await serveHandler(http.fetch, { port: 0, closeStreams: http.closeStreams })
  servers.push(server)
  return { store, http, server, tail: state.lastSeq }
}

/** Sends raw bytes and returns the raw response text (for requests fetch refuses to make). */
function raw(server: ServerHandle, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1', () => socket.end(text))
    let out = ''
    socket.on('data', (d) => (out += d))
    socket.on('end', () => resolve(out))
    socket.on('error', reject)
  })
}

describe('serveHandler over loopback', () => {
  it('binds 127.0.0.1 on a free port and serves the routes', async () => {
    const { server, tail } = await setup()
    expect(server.hostname).toBe('127.0.0.1')
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`)
    const res = await fetch(`${server.url}/runs/r1`)
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ runId: 'r1', state: { lastSeq: tail } })
    const signal = await fetch(`${server.url}/runs/r1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k1' },
      body: JSON.stringify({ events: [{ type: 'ping' }] }),
    })
    // A keyed signal records its key (runtime.signal.received), then its event.
    expect((await signal.json()).state.lastSeq).toBe(tail + 2)
  })

  it('answers paths outside the API with a JSON 404', async () => {
    const { server } = await setup()
    const res = await fetch(`${server.url}/favicon.ico`)
    expect(res.status).toBe(404)
    expect((await res.json()).error.code).toBe('NOT_FOUND')
  })

  it('answers malformed requests with JSON 4xx, never 5xx', async () => {
    const { server } = await setup()
    const cases = [
      'GET /runs\\r1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'GET /runs/%zz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
      'GET /runs/a%2Fb/events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
      'GET /runs/../runs/r1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
      'GET /runs/r1 HTTP/1.1\r\nHost: bad host!\r\nConnection: close\r\n\r\n',
    ]
    for (const text of cases) {
      const out = await raw(server, text)
      const status = Number(out.split(' ')[1])
      expect(status, out).toBeGreaterThanOrEqual(200)
      expect(status, out).toBeLessThan(500)
    }
  })

  it('refuses an oversized chunked upload with 413 while it streams', async () => {
    const { server, store, tail } = await setup(2048)
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 64; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(1024)))
        controller.close()
      },
    })
    const res = await fetch(`${server.url}/runs/r1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit)
    expect(res.status).toBe(413)
    expect((await res.json()).error.code).toBe('PAYLOAD_TOO_LARGE')
    expect(await store.tail('r1')).toBe(tail)
  })

  it('streams SSE over the socket; client disconnect unsubscribes; close() ends streams', async () => {
    const { server, store } = await setup()
    const controller = new AbortController()
    const a = await fetch(`${server.url}/runs/r1/events?live=true`, { signal: controller.signal })
    const b = await fetch(`${server.url}/runs/r1/events`, {
      headers: { accept: 'text/event-stream' },
    })
    const readA = a.body!.getReader()
    await readA.read()
    expect(store.subscriptions.active).toBe(2)
    controller.abort()
    await readA.closed.catch(() => {})
    await expect.poll(() => store.subscriptions.active).toBe(1)
    const text = b.text()
    await server.close()
    expect(await text).toContain('retry: 1000')
    expect(store.subscriptions.active).toBe(0)
  })
})
