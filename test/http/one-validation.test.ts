import { createEngine, type Engine, type EventInput, memoryStore, type ServerHandle } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'

// A signal is validated in one place (the engine), with one set of limits, so the
// embed API and `POST /runs/:id/events` refuse the same signals with the same error.

const MAX_EVENT_BYTES = 1024

const parked = defineWorkflow({
  name: 'parked',
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})

let engine: Engine
let server: ServerHandle
afterEach(async () => {
  await server?.close()
  await engine?.stop()
})

async function setup() {
  const store = memoryStore()
  engine = createEngine({
    modules: [workflow({ definitions: [parked] })],
    store,
    limits: { maxEventBytes: MAX_EVENT_BYTES },
  })
  server = await engine.serve({ port: 0 })
  const { runId } = await engine.start(parked)
  const log = async () => JSON.stringify(await store.read(runId))
  return { runId, log }
}

const post = async (path: string, body: unknown) => {
  const response = await fetch(server.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const answer = (await response.json()) as {
    error: { code: string; message: string; details?: unknown }
  }
  return { status: response.status, ...answer.error }
}

const embedError = async (call: Promise<unknown>) => {
  const error = (await call.then(
    () => ({ code: 'ACCEPTED', message: '' }),
    (e) => e,
  )) as { code: string; message: string; details?: unknown }
  return { code: error.code, message: error.message, details: error.details }
}

interface Case {
  name: string
  events: unknown
  key?: string
  code: string
}

const CASES: Case[] = [
  {
    name: 'a payload over limits.maxEventBytes (not 413: the body itself is small)',
    events: [{ type: 'app.note', payload: { text: 'x'.repeat(2 * MAX_EVENT_BYTES) } }],
    code: 'INVALID_EVENT',
  },
  {
    name: 'an event field that EventInput does not have',
    events: [{ type: 'app.note', threadid: 'typo' }],
    code: 'INVALID_EVENT',
  },
  {
    name: 'more than 1,000 events in one signal',
    events: Array.from({ length: 1001 }, () => ({ type: 'app.note' })),
    code: 'INVALID_EVENT',
  },
  { name: 'no events', events: [], code: 'INVALID_EVENT' },
  { name: 'events that are not an array', events: { type: 'app.note' }, code: 'INVALID_EVENT' },
  {
    name: 'a type over 200 characters',
    events: [{ type: `app.${'x'.repeat(200)}` }],
    code: 'INVALID_EVENT',
  },
  {
    name: 'a threadId that is not a string',
    events: [{ type: 'app.x', threadId: 7 }],
    code: 'INVALID_EVENT',
  },
  {
    name: 'an idempotency key with a control character',
    events: [{ type: 'app.note' }],
    key: 'a\u0001b',
    code: 'INVALID_REQUEST',
  },
  {
    name: 'an idempotency key over 256 characters',
    events: [{ type: 'app.note' }],
    key: 'k'.repeat(257),
    code: 'INVALID_REQUEST',
  },
]

describe('one validation of signals for HTTP and embed', () => {
  it.each(CASES)('$name: the same error both ways, nothing written', async (bad) => {
    const { runId, log } = await setup()
    const before = await log()
    const options = bad.key === undefined ? {} : { idempotencyKey: bad.key }
    const embed = await embedError(engine.signal(runId, bad.events as EventInput[], options))
    const http = await post(`/runs/${runId}/events`, { events: bad.events, ...options })
    expect(embed.code).toBe(bad.code)
    expect(http).toEqual({ status: 400, ...embed })
    expect(await log()).toBe(before)
  })

  it('a start input over limits.maxEventBytes is INVALID_INPUT both ways', async () => {
    await setup()
    const input = { text: 'x'.repeat(2 * MAX_EVENT_BYTES) }
    const embed = await embedError(engine.start(parked, input))
    const http = await post('/runs', { kind: 'workflow', definitionName: 'parked', input })
    expect(embed.code).toBe('INVALID_INPUT')
    expect(http).toEqual({ status: 400, ...embed })
  })

  it('a body over limits.maxRequestBytes is still 413 PAYLOAD_TOO_LARGE', async () => {
    const { runId } = await setup()
    const events = [{ type: 'app.note', payload: { text: 'x'.repeat(2 * 1024 * 1024) } }]
    const http = await post(`/runs/${runId}/events`, { events })
    expect([http.status, http.code]).toEqual([413, 'PAYLOAD_TOO_LARGE'])
  })
})
