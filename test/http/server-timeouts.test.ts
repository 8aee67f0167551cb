import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { serveHandler } from '../../src/http/server.js'
import type { Engine, ServerHandle } from '../../src/runtime/engine-types.js'
import { makeHandler } from './helpers.js'
import { realEngine, START_RELEASE } from './real-engine.js'

// A request whose body is shorter than its Content-Length was held until the
// client gave up. The Node server now bounds how long headers and the whole request may take
// to arrive. The timers are Node's own, so these tests take real (short) time; they assert
// what happens, never how long it took.

const servers: ServerHandle[] = []
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

async function serve(options: { requestTimeoutMs?: number; headersTimeoutMs?: number }) {
  const { engine } = realEngine()
  engines.push(engine)
  await engine.startRun({ ...START_RELEASE, runId: 'r1' })
  const http = makeHandler(engine)
  const server = await serveHandler(
    async (request) => {
      // A slow handler: answering may take longer than receiving the request may.
      if (new URL(request.url).pathname === '/health') await new Promise((r) => setTimeout(r, 600))
      return http.fetch(request)
    },
    { port: 0, closeStreams: http.closeStreams, ...options },
  )
  servers.push(server)
  return server
}

/** Sends raw bytes and resolves with everything the server sent before it closed. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      text += chunk
    })
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
    socket.write(bytes)
  })
}

describe('Node server timeouts', () => {
  it('answers a request whose body never fully arrives with 408 and closes it', async () => {
    const server = await serve({ requestTimeoutMs: 300, headersTimeoutMs: 200 })
    const answer = await rawExchange(
      server.port,
      'POST /runs/r1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100\r\n\r\n{"events":',
    )
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
  })

  it('closes a connection whose headers never finish', async () => {
    const server = await serve({ requestTimeoutMs: 300, headersTimeoutMs: 200 })
    const answer = await rawExchange(server.port, 'GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ')
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
  })

  it('does not cut a request that arrived in time but takes longer to answer', async () => {
    const server = await serve({ requestTimeoutMs: 300, headersTimeoutMs: 200 })
    const res = await fetch(`${server.url}/health`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ok: true })
  })

  it('refuses a headers timeout longer than the request timeout', async () => {
    await expect(serve({ requestTimeoutMs: 100, headersTimeoutMs: 200 })).rejects.toThrow(
      /headersTimeoutMs .* requestTimeoutMs/,
    )
  })
})
