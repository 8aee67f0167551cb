import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve as honoServe } from '@hono/node-server'
import express from 'express'
import { Hono } from 'hono'
import { createEngine, toNodeMiddleware } from 'skein'
import { approval } from 'skein/approval'
import { createEngineClient } from 'skein/client'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { release, START_RELEASE } from './real-engine.js'

// The API under a base path, the Web handler mounted in Hono,
// and an Express/Connect middleware that works behind `express.json()` (which used to leave
// `POST /skein/runs` answering "request body is empty"). Real sockets throughout.

const closers: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

function engineWith(http: { basePath?: string } = {}, maxRequestBytes?: number) {
  const engine = createEngine({
    modules: [workflow({ definitions: [release] }), approval()],
    http,
    ...(maxRequestBytes ? { limits: { maxRequestBytes } } : {}),
  })
  closers.push(() => engine.stop())
  return engine
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => new Promise((resolve) => server.close(resolve)))
  closers.push(async () => server.closeAllConnections())
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Start, gate, approve and follow a run through the client at `baseUrl`. */
async function roundTrip(baseUrl: string) {
  const client = createEngineClient({ baseUrl })
  expect(await client.health()).toEqual({ ok: true })
  const { definitions } = await client.listDefinitions()
  expect(definitions.map((d) => d.name)).toContain('release')
  const { runId, state } = await client.startRun({ ...START_RELEASE, input: { topic: 'mounts' } })
  expect(state.status).toBe('running')
  const { value } = await client.project<{ items: Array<{ approvalId: string }> }>(
    runId,
    'pendingApprovals',
  )
  const ended = new Promise((resolve) => {
    client.subscribeEvents(runId, () => {}, { onEnd: resolve })
  })
  const decided = await client.signal(runId, [
    {
      type: 'approval.decided',
      payload: { approvalId: value.items[0].approvalId, outcome: 'reject' },
    },
  ])
  expect(decided.state.status).toBe('completed')
  expect(await ended).toMatchObject({ runId, status: 'completed' })
}

const post = (url: string, body: string, contentType = 'application/json') =>
  fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body })

describe('the API under a base path', () => {
  it('answers only under it; paths outside are the app’s', async () => {
    const engine = engineWith({ basePath: '/skein/' })
    expect((await engine.fetch(new Request('http://x/skein/health')))?.status).toBe(200)
    expect(await engine.fetch(new Request('http://x/health'))).toBeNull()
    expect(await engine.fetch(new Request('http://x/runs'))).toBeNull()
    expect(await engine.fetch(new Request('http://x/skein'))).toBeNull()
    expect(await engine.fetch(new Request('http://x/skeinx/health'))).toBeNull()
    const missing = (await engine.fetch(new Request('http://x/skein/nope')))!
    expect(missing.status).toBe(404)
  })

  it('refuses a base path that is not plain segments, or one the debugger would shadow', () => {
    for (const basePath of ['skein', '/a/../b', '/a b', '/a?x', '/%2e']) {
      expect(() => createEngine({ http: { basePath } })).toThrow(/http\.basePath/)
    }
    const ui = { fetch: () => new Response('ui') }
    expect(() =>
      createEngine({ http: { basePath: '/api' }, debugger: { basePath: '/api/runs', ui } }),
    ).toThrow(/overlaps/)
    expect(() =>
      createEngine({ http: { basePath: '/tools/api' }, debugger: { basePath: '/tools', ui } }),
    ).toThrow(/overlaps/)
    // Beside each other is fine, and so is the debugger at the API's old root paths.
    createEngine({ http: { basePath: '/api' }, debugger: { basePath: '/runs', ui } })
  })
})

describe('mounted in Hono (engine.fetch)', () => {
  it('serves the API under /skein beside the app’s own routes', async () => {
    const engine = engineWith({ basePath: '/skein' })
    const app = new Hono()
    app.get('/', (c) => c.text('home'))
    app.all('/skein/*', async (c) => (await engine.fetch(c.req.raw)) ?? c.notFound())
    const server = honoServe({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server
    await new Promise((resolve) => server.once('listening', resolve))
    closers.push(() => new Promise((resolve) => server.close(resolve)))
    closers.push(async () => server.closeAllConnections())
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    await roundTrip(`${url}/skein`)
    expect(await (await fetch(`${url}/`)).text()).toBe('home')
    expect((await fetch(`${url}/runs`)).status).toBe(404)
  })
})

describe('toNodeMiddleware (Express/Connect)', () => {
  it('works behind express.json() mounted with app.use("/skein", …)', async () => {
    const engine = engineWith({}, 2048)
    const app = express()
    app.use(express.json())
    app.use('/skein', toNodeMiddleware(engine))
    app.get('/', (_req, res) => {
      res.send('home')
    })
    const url = await listen(createServer(app))
    await roundTrip(`${url}/skein`)
    expect(await (await fetch(`${url}/`)).text()).toBe('home')

    // Skein's own rules still hold for a body express.json() already parsed.
    const forged = await post(
      `${url}/skein/runs`,
      '{"kind":"workflow","definitionName":"release","__proto__":{"x":1}}',
    )
    expect(forged.status).toBe(400)
    expect((await forged.json()).error.code).toBe('INVALID_REQUEST')
    const big = await post(
      `${url}/skein/runs`,
      JSON.stringify({ ...START_RELEASE, input: { pad: 'x'.repeat(4000) } }),
    )
    expect(big.status).toBe(413)
    expect((await big.json()).error.code).toBe('PAYLOAD_TOO_LARGE')
    const text = await post(`${url}/skein/runs`, 'kind=workflow', 'text/plain')
    expect(text.status).toBe(415)
    const unknown = await post(`${url}/skein/runs`, JSON.stringify({ ...START_RELEASE, extra: 1 }))
    expect(unknown.status).toBe(400)
  })

  it('works with the engine’s basePath and no mount path, before or after express.json()', async () => {
    const engine = engineWith({ basePath: '/skein' })
    const app = express()
    app.use(toNodeMiddleware(engine))
    app.use(express.json())
    app.post('/echo', (req, res) => {
      res.json({ echoed: req.body })
    })
    const url = await listen(createServer(app))
    await roundTrip(`${url}/skein`)
    // The app's own routes, and its own parsed bodies, are untouched.
    const echoed = await post(`${url}/echo`, '{"a":1}')
    expect(await echoed.json()).toEqual({ echoed: { a: 1 } })
    expect((await fetch(`${url}/runs`)).status).toBe(404)
  })

  it('works mounted at its basePath too, and as plain Node middleware', async () => {
    const engine = engineWith({ basePath: '/skein' })
    const app = express()
    app.use(express.json())
    app.use('/skein', toNodeMiddleware(engine))
    await roundTrip(`${await listen(createServer(app))}/skein`)

    const plain = engineWith()
    const middleware = toNodeMiddleware(plain)
    const url = await listen(
      createServer((req, res) =>
        middleware(req, res, () => {
          res.statusCode = 418
          res.end('app')
        }),
      ),
    )
    await roundTrip(url)
    const other = await fetch(`${url}/elsewhere`)
    expect(other.status).toBe(418)
  })
})
