import { mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, type Engine, type ServerHandle } from 'skein'
import { approval } from 'skein/approval'
import { ClientError, createEngineClient } from 'skein/client'
import { sqliteStore } from 'skein/sqlite'
import { manualClock } from 'skein/testing'
import { workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { release } from './real-engine.js'

// Signal key conflicts are 409, a repeated Idempotency-Key
// header is a 400 (not the key "a, b"), and a keyed start without a runId returns the run its
// key created, on plain and streaming starts, from the client, and after a restart.

const dir = mkdtempSync(join(tmpdir(), 'skein-http-keys-'))
let files = 0
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let engine: Engine
let server: ServerHandle
afterEach(async () => {
  await server?.close()
  await engine?.stop()
})

async function serve(path = join(dir, `keys-${++files}.db`)) {
  engine = createEngine({
    modules: [workflow({ definitions: [release] }), approval()],
    store: sqliteStore({ path }),
    clock: manualClock(),
  })
  server = await engine.serve({ port: 0 })
  return path
}

const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(server.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
  return { status: response.status, body: await response.json() }
}

/** A raw request, so a header can be sent twice (fetch would merge it). */
function rawPost(path: string, body: unknown, headers: Array<[string, string]>) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const url = new URL(server.url + path)
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method: 'POST' },
      (res) => {
        let text = ''
        res.on('data', (chunk) => (text += chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
      },
    )
    req.on('error', reject)
    req.setHeader('content-type', 'application/json')
    const grouped = new Map<string, string[]>()
    for (const [name, value] of headers) grouped.set(name, [...(grouped.get(name) ?? []), value])
    for (const [name, values] of grouped) req.setHeader(name, values)
    req.end(JSON.stringify(body))
  })
}

const START = { kind: 'workflow', definitionName: 'release', input: { topic: 'keys' } }

describe('POST /runs/:id/events idempotency', () => {
  it('50 concurrent bodies under one key: one 200, 49 × 409; identical retries: 200 each', async () => {
    await serve()
    const { body: started } = await post('/runs', START)
    const runId = started.runId
    const different = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        post(
          `/runs/${runId}/events`,
          { events: [{ type: 'app.note', payload: { i } }] },
          {
            'idempotency-key': 'sd',
          },
        ),
      ),
    )
    const statuses = different.map((r) => r.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(1)
    expect(statuses.filter((s) => s === 409)).toHaveLength(49)
    expect(different.find((r) => r.status === 409)?.body.error.code).toBe('IDEMPOTENCY_CONFLICT')

    const identical = await Promise.all(
      Array.from({ length: 50 }, () =>
        post(`/runs/${runId}/events`, {
          events: [{ type: 'app.note', payload: { b: 2, a: 1 } }],
          idempotencyKey: 'same',
        }),
      ),
    )
    expect(identical.every((r) => r.status === 200)).toBe(true)
    const { body } = await post(`/runs/${runId}/events`, {
      events: [{ type: 'app.note', payload: { a: 1, b: 2 } }],
      idempotencyKey: 'same',
    })
    expect(body.state.lastSeq).toBe(identical[0].body.state.lastSeq)
    const events = await (await fetch(`${server.url}/runs/${runId}/events`)).json()
    expect(events.events.filter((e: { type: string }) => e.type === 'app.note')).toHaveLength(2)
  })

  it('a repeated Idempotency-Key header, a comma, or a body key that differs is a 400', async () => {
    await serve()
    const { body: started } = await post('/runs', START)
    const path = `/runs/${started.runId}/events`
    const events = [{ type: 'app.note', payload: {} }]
    const twice = await rawPost(path, { events }, [
      ['idempotency-key', 'a'],
      ['idempotency-key', 'b'],
    ])
    expect([twice.status, twice.body.error.code]).toEqual([400, 'INVALID_REQUEST'])
    expect(twice.body.error.message).toContain('one header')
    const comma = await post(path, { events }, { 'idempotency-key': 'a, b' })
    expect(comma.status).toBe(400)
    const differ = await post(path, { events, idempotencyKey: 'a' }, { 'idempotency-key': 'b' })
    expect(differ.status).toBe(400)
    const tail = started.state.lastSeq
    const run = await (await fetch(`${server.url}/runs/${started.runId}`)).json()
    expect(run.state.lastSeq).toBe(tail)
    // Once, it is the key: the same body again is a no-op, another one a conflict.
    const once = await post(path, { events }, { 'idempotency-key': 'a' })
    expect(once.status).toBe(200)
    expect((await post(path, { events, idempotencyKey: 'a' })).body.state.lastSeq).toBe(
      once.body.state.lastSeq,
    )
    expect(
      (await post(path, { events: [{ type: 'app.other' }] }, { 'idempotency-key': 'a' })).status,
    ).toBe(409)
  })

  it('the client rejects a conflict with ClientError 409 IDEMPOTENCY_CONFLICT', async () => {
    await serve()
    const client = createEngineClient({ baseUrl: server.url })
    const { runId } = await client.startRun({ ...START })
    await client.signal(runId, [{ type: 'app.note', payload: { n: 1 } }], { idempotencyKey: 'c' })
    const error = await client
      .signal(runId, [{ type: 'app.note', payload: { n: 2 } }], { idempotencyKey: 'c' })
      .catch((e) => e)
    expect(error).toBeInstanceOf(ClientError)
    expect([error.status, error.code]).toEqual([409, 'IDEMPOTENCY_CONFLICT'])
  })
})

describe('a keyed start without a runId', () => {
  it('returns the run its key created: plain, streaming, client, and after a restart', async () => {
    const path = await serve()
    const key = { 'idempotency-key': 'order-42' }
    const first = await post('/runs', START, key)
    expect(first.status).toBe(200)
    const runId = first.body.runId
    expect(runId).toMatch(
      /^run_[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    )
    const again = await post('/runs', START, key)
    expect(again.body.runId).toBe(runId)
    expect(again.body.state.lastSeq).toBe(first.body.state.lastSeq)
    const other = await post('/runs', { ...START, input: { topic: 'else' } }, key)
    expect([other.status, other.body.error.code]).toEqual([409, 'START_CONFLICT'])

    const client = createEngineClient({ baseUrl: server.url })
    expect((await client.startRun({ ...START, idempotencyKey: 'order-42' })).runId).toBe(runId)
    const stream = client.streamRun({ ...START, idempotencyKey: 'order-42' })
    expect(stream.runId).toBe(runId)
    expect((await stream.result).runId).toBe(runId)
    const streamed = await fetch(`${server.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...key },
      body: JSON.stringify(START),
    })
    expect(await streamed.text()).toContain(`"runId":"${runId}"`)

    await server.close()
    await engine.stop()
    await serve(path)
    const restarted = await post('/runs', START, key)
    expect(restarted.body.runId).toBe(runId)
    const runs = await (await fetch(`${server.url}/runs`)).json()
    expect(runs.runIds).toEqual([runId])
  })
})
