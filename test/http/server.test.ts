import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { serveHandler } from '../../src/http/server.js'
import type { ServerHandle } from '../../src/runtime/engine-types.js'
import { fakeEngine } from './fake-engine.js'
import { makeHandler, manualTimers } from './helpers.js'

const servers: ServerHandle[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

async function setup(maxRequestBytes?: number) {
  const engine = fakeEngine()
  await engine.startRun({ kind: 'test', definitionName: 'echo', runId: 'r1' })
  const http = makeHandler(engine, {
    sse: { timers: manualTimers() },
    ...(maxRequestBytes ? { maxRequestBytes } : {}),
  })
  const server = await serveHandler(http.fetch, { port: 0, closeStreams: http.closeStreams })
  servers.push(server)
  return { engine, http, server }
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
    const { server } = await setup()
    expect(server.hostname).toBe('127.0.0.1')
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`)
    const res = await fetch(`${server.url}/runs/r1`)
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ runId: 'r1', state: { lastSeq: 3 } })
    const signal = await fetch(`${server.url}/runs/r1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k1' },
      body: JSON.stringify({ events: [{ type: 'ping' }] }),
    })
    expect((await signal.json()).state.lastSeq).toBe(4)
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
    const { server, engine } = await setup(2048)
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
    expect(await (await engine.store).tail('r1')).toBe(3)
  })

  it('streams SSE over the socket; client disconnect unsubscribes; close() ends streams', async () => {
    const { server, engine } = await setup()
    const controller = new AbortController()
    const a = await fetch(`${server.url}/runs/r1/events?live=true`, { signal: controller.signal })
    const b = await fetch(`${server.url}/runs/r1/events`, {
      headers: { accept: 'text/event-stream' },
    })
    const readA = a.body!.getReader()
    await readA.read()
    expect(engine.subscriptions.active).toBe(2)
    controller.abort()
    await readA.closed.catch(() => {})
    await expect.poll(() => engine.subscriptions.active).toBe(1)
    const text = b.text()
    await server.close()
    expect(await text).toContain('retry: 1000')
    expect(engine.subscriptions.active).toBe(0)
  })
})
