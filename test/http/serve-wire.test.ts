import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { bearerAuth } from '../../src/http/bearer-auth.js'
import type { HandlerOptions } from '../../src/http/route-types.js'
import { serveHandler } from '../../src/http/server.js'
import type { Engine, ServerHandle } from '../../src/runtime/engine-types.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import {
  appendRaw,
  countingStore,
  expectSeamlessStream,
  idsOf,
  json,
  makeHandler,
  manualTimers,
  sseReader,
} from './helpers.js'
import { realEngine, START_RELEASE } from './real-engine.js'

// What `serve` writes on the wire: JSON bodies and SSE frames go straight to the Node response
// (not through the Web body stream), so these tests look at the bytes a real client receives.

const servers: ServerHandle[] = []
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

async function serveReal(options: Parameters<typeof realEngine>[0] = {}) {
  const { engine } = realEngine(options)
  engines.push(engine)
  const server = await engine.serve({ port: 0 })
  servers.push(server)
  return { engine, server }
}

/**
 * The handler of a real engine (run r1 parked on its gate, `tail` events) with manual SSE
 * timers, served through `wrap`, which may change or hold a response.
 */
async function serveWrapped(
  sse: HandlerOptions['sse'] = {},
  wrap: (res: Response, request: Request) => Response | Promise<Response> = (res) => res,
) {
  const { engine, store } = realEngine({ store: countingStore(memoryStore()) })
  engines.push(engine)
  const timers = manualTimers()
  const http = makeHandler(engine, { sse: { timers, ...sse } })
  const { state } = await engine.startRun({ ...START_RELEASE, runId: 'r1' })
  const server = await serveHandler(
    async (request) => wrap((await http.fetch(request))!, request),
    {
      port: 0,
      closeStreams: http.closeStreams,
    },
  )
  servers.push(server)
  return { store, engine, timers, http, server, tail: state.lastSeq }
}

/** Status, headers and the exact body text, checking content-length against the bytes. */
async function wire(res: Response) {
  const text = await res.text()
  expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(text)))
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) }
}

/**
 * A raw HTTP/1.1 request on a socket the test can pause: a subscriber that stops reading, so
 * the server's socket buffer fills. `ended` resolves on the chunked body's last chunk.
 */
function rawSubscriber(server: ServerHandle, path: string, headers: Record<string, string> = {}) {
  const socket = connect(server.port, '127.0.0.1')
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n${extra}\r\n`,
  )
  socket.setEncoding('utf8')
  let text = ''
  let check = () => {}
  socket.on('data', (chunk: string) => {
    text += chunk
    check()
  })
  const until = (predicate: (text: string) => boolean) =>
    new Promise<void>((resolve) => {
      check = () => {
        if (predicate(text)) resolve()
      }
      check()
    })
  return {
    socket,
    get text() {
      return text
    },
    until,
    ended: () => until((t) => t.endsWith('\r\n0\r\n\r\n')),
  }
}

describe('JSON answers written by serve', () => {
  it('carry status, content-type, content-length and the same body as http.fetch', async () => {
    const { engine, server } = await serveReal()
    const started = await wire(
      await fetch(`${server.url}/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...START_RELEASE, runId: 'w1', input: { topic: 'ünïcødé ✓' } }),
      }),
    )
    expect(started.status).toBe(200)
    expect(started.headers.get('content-type')).toBe('application/json; charset=utf-8')
    const got = await wire(await fetch(`${server.url}/runs/w1`))
    const web = (await engine.fetch(json('GET', '/runs/w1')))!
    expect(got.text).toBe(await web.text())
    expect(got.body.state.status).toBe('running')
  })

  it('keep error statuses and their headers: 404, 405 with allow, 401 with www-authenticate', async () => {
    const { server } = await serveReal({ authorize: bearerAuth({ read: 'read-token-0123456789' }) })
    const authed = { authorization: 'Bearer read-token-0123456789' }
    const missing = await wire(await fetch(`${server.url}/runs/ghost`, { headers: authed }))
    expect([missing.status, missing.body.error.code]).toEqual([404, 'RUN_NOT_FOUND'])
    const method = await wire(await fetch(`${server.url}/runs/ghost`, { method: 'PUT' }))
    expect([method.status, method.body.error.code]).toEqual([405, 'METHOD_NOT_ALLOWED'])
    expect(method.headers.get('allow')).toBe(method.body.error.details.allow.join(', '))
    const anonymous = await wire(await fetch(`${server.url}/runs/ghost`))
    expect([anonymous.status, anonymous.body.error.code]).toEqual([401, 'UNAUTHORIZED'])
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer\b/)
    const outside = await wire(await fetch(`${server.url}/favicon.ico`))
    expect([outside.status, outside.body.error.code]).toEqual([404, 'NOT_FOUND'])
  })

  it('keep headers set on the Response after the route built it', async () => {
    const answered: Response[] = []
    const { server, tail } = await serveWrapped({}, (res) => {
      res.headers.set('x-trace', 'abc')
      answered.push(res)
      return res
    })
    const got = await wire(await fetch(`${server.url}/runs/r1`))
    expect(got.headers.get('x-trace')).toBe('abc')
    expect(got.body).toMatchObject({ runId: 'r1', state: { lastSeq: tail } })
    // Written from the text it was built from: its Web body was never read.
    expect(answered[0].bodyUsed).toBe(false)
  })

  it("write an authorize hook's own Response as it is", async () => {
    const { server } = await serveReal({
      authorize: () =>
        new Response('{"no":true}', {
          status: 403,
          headers: { 'content-type': 'application/json', 'x-why': 'policy' },
        }),
    })
    const res = await fetch(`${server.url}/runs/w1`)
    expect(res.status).toBe(403)
    expect(res.headers.get('x-why')).toBe('policy')
    expect(await res.json()).toEqual({ no: true })
  })

  it('leave http.fetch (the Web path) with readable bodies', async () => {
    const { http, tail } = await serveWrapped()
    const res = (await http.fetch(json('GET', '/runs/r1')))!
    const copy = res.clone()
    expect(res.body).toBeInstanceOf(ReadableStream)
    expect(JSON.parse(await res.text())).toMatchObject({ runId: 'r1' })
    expect((await copy.json()).state.lastSeq).toBe(tail)
    const error = (await http.fetch(json('GET', '/runs/ghost')))!
    expect((await error.json()).error.code).toBe('RUN_NOT_FOUND')
    const live = sseReader((await http.fetch(json('GET', '/runs/r1/events?live=true')))!)
    await live.until((t) => idsOf(t).includes(tail))
    expect(live.text.startsWith('retry: 1000\n: connected\n\n')).toBe(true)
    await live.cancel()
  })
})

describe('SSE written by serve', () => {
  it('sends the SSE headers, resumes after Last-Event-ID and keeps alive', async () => {
    const answered: Response[] = []
    const { server, timers, tail } = await serveWrapped({}, (res) => {
      answered.push(res)
      return res
    })
    const res = await fetch(`${server.url}/runs/r1/events?live=true`, {
      headers: { 'last-event-id': '1' },
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-cache')
    expect(res.headers.get('x-accel-buffering')).toBe('no')
    expect(res.headers.get('content-length')).toBeNull()
    const reader = sseReader(res)
    await reader.until((t) => idsOf(t).includes(tail))
    expect(reader.text.startsWith('retry: 1000\n: connected\n\n')).toBe(true)
    expect(idsOf(reader.text)).toEqual(Array.from({ length: tail - 1 }, (_, i) => i + 2))
    timers.tick()
    await reader.until((t) => t.endsWith(': keepalive\n\n'))
    // The frames went to the socket directly: nobody read the Response's Web body.
    expect(answered[0].body!.locked).toBe(false)
    await reader.cancel()
    await expect.poll(() => timers.active).toBe(0)
  })

  it('catches up then goes live with no gap or duplicate at the seam', async () => {
    const { server, store } = await serveWrapped({ pageSize: 2 })
    // Appends land between catch-up pages, at the seam and after it.
    await expectSeamlessStream(
      store,
      () => fetch(`${server.url}/runs/r1/events?fromSeq=1&live=true`),
      6,
    )
  })

  it('disconnects a subscriber whose socket stops reading, which then resumes with Last-Event-ID', async () => {
    const { server, store, tail } = await serveWrapped({ maxBufferedEvents: 10 })
    const slow = rawSubscriber(server, '/runs/r1/events')
    await slow.until((t) => idsOf(t).includes(tail))
    slow.socket.pause()
    // Big frames fill the kernel's socket buffers (the loop yields to I/O so the socket can
    // drain while there is room); from then on frames queue in the server, and the 11th
    // queued one ends the stream. The cap only guards against a hang.
    const payload = { blob: 'x'.repeat(64 * 1024) }
    let appended = 0
    while (store.subscriptions.active > 0 && appended < 2000) {
      await appendRaw(store, 'r1', [`burst.${appended++}`], payload)
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect(store.subscriptions.active).toBe(0)
    // Events after the disconnect are for the resumed stream.
    await appendRaw(store, 'r1', ['after.0', 'after.1'])
    const total = await store.tail('r1')
    slow.socket.resume()
    await slow.ended()
    const got = idsOf(slow.text)
    expect(got.length).toBeLessThan(total)
    expect(got).toEqual(Array.from({ length: got.length }, (_, i) => i + 1))

    const resumed = rawSubscriber(server, '/runs/r1/events', {
      'last-event-id': String(got.at(-1)),
    })
    await resumed.until((t) => idsOf(t).includes(total))
    expect([...got, ...idsOf(resumed.text)]).toEqual(Array.from({ length: total }, (_, i) => i + 1))
    resumed.socket.destroy()
  })

  it('ends open streams when the server closes and on client disconnect', async () => {
    const { server, store, tail } = await serveWrapped()
    const gone = rawSubscriber(server, '/runs/r1/events')
    const staying = rawSubscriber(server, '/runs/r1/events')
    await gone.until((t) => idsOf(t).includes(tail))
    await staying.until((t) => idsOf(t).includes(tail))
    expect(store.subscriptions.active).toBe(2)
    gone.socket.destroy()
    await expect.poll(() => store.subscriptions.active).toBe(1)
    await server.close()
    // The chunked body ends properly, it is not cut off.
    await staying.ended()
    expect(store.subscriptions.active).toBe(0)
  })

  it('leaves no subscription behind when the client goes while the route runs', async () => {
    let gone!: () => void
    const clientGone = new Promise<void>((resolve) => {
      gone = resolve
    })
    const { server, store } = await serveWrapped({}, async (res, request) => {
      request.signal.addEventListener('abort', () => gone())
      await clientGone
      return res
    })
    const subscriber = rawSubscriber(server, '/runs/r1/events')
    await expect.poll(() => store.subscriptions.active).toBe(1)
    subscriber.socket.destroy()
    await clientGone
    await expect.poll(() => store.subscriptions.active).toBe(0)
  })

  it('streams a streaming start: its events, then the done frame', async () => {
    const { server, engine } = await serveWrapped()
    const res = await fetch(`${server.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ ...START_RELEASE, runId: 's1' }),
    })
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const text = await res.text()
    expect(text.startsWith('retry: 1000\n: connected\n\n')).toBe(true)
    const { lastSeq } = await engine.getRun('s1')
    expect(idsOf(text)).toEqual(Array.from({ length: lastSeq }, (_, i) => i + 1))
    expect(text).toMatch(/event: done\ndata: \{"runId":"s1"/)
  })
})
