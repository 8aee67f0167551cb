// POST /runs and POST /runs/:id/events over a real server: they answer without waiting for a
// long in-process effect, and hold the request when the body says `"wait": "settled"`.
import { createEngine, defineEffect, defineModule, type Engine, type ServerHandle } from 'skein'
import { createEngineClient } from 'skein/client'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../support/children.js'

const held: Array<(value: unknown) => void> = []
const heldModule = defineModule({
  namespace: 'held',
  effects: {
    call: defineEffect<unknown, unknown>({
      execute: () => new Promise((resolve) => held.push(resolve)),
    }),
  },
})

const slow = defineWorkflow({
  name: 'slow',
  nodes: { call: { run: (ctx) => ctx.invoke('held.call') } },
})
const poked = defineWorkflow({
  name: 'poked',
  nodes: {
    poke: { run: (ctx) => ctx.waitFor('app.poke') },
    call: { after: ['poke'], run: (ctx) => ctx.invoke('held.call') },
  },
})

let engine: Engine
let server: ServerHandle
afterEach(async () => {
  held.length = 0
  await server?.close()
  await engine?.stop()
})

async function serve() {
  engine = createEngine({ modules: [workflow({ definitions: [slow, poked] }), heldModule] })
  server = await engine.serve({ port: 0 })
  return server.url
}

const post = (url: string, body: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })

/** Resolves once `held` has `n` attempts waiting (they start right after a commit). */
async function attempts(n: number) {
  await waitFor(`${n} effect attempt(s) waiting`, () => held.length >= n, {
    withinMs: 10_000,
    seen: () => `${held.length} waiting`,
  })
}

describe('HTTP: when POST /runs and POST /runs/:id/events answer', () => {
  it('POST /runs answers while the effect is still running', async () => {
    const url = await serve()
    const response = await post(`${url}/runs`, { kind: 'workflow', definitionName: 'slow' })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.state.status).toBe('running')
    expect(held).toHaveLength(1)
    held[0]('ok')
  })

  it('POST /runs with "wait": "settled" answers once the run has settled', async () => {
    const url = await serve()
    let answered = false
    const request = post(`${url}/runs`, {
      kind: 'workflow',
      definitionName: 'slow',
      runId: 'waited',
      wait: 'settled',
    }).then((r) => {
      answered = true
      return r
    })
    await attempts(1)
    expect((await engine.getRun('waited')).status).toBe('running')
    expect(answered).toBe(false)
    held[0]({ done: true })
    const response = await request
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.state).toMatchObject({ status: 'completed', output: { call: { done: true } } })
  })

  it('POST /runs/:id/events takes "wait" in its body; a bad value is a 400', async () => {
    const url = await serve()
    const start = await (
      await post(`${url}/runs`, { kind: 'workflow', definitionName: 'poked' })
    ).json()
    const bad = await post(`${url}/runs/${start.runId}/events`, {
      events: [{ type: 'app.poke' }],
      wait: 'later',
    })
    expect(bad.status).toBe(400)
    expect((await bad.json()).error.code).toBe('INVALID_REQUEST')
    let answered = false
    const request = post(`${url}/runs/${start.runId}/events`, {
      events: [{ type: 'app.poke' }],
      wait: 'settled',
    }).then((r) => {
      answered = true
      return r
    })
    await attempts(1)
    expect(answered).toBe(false)
    held[0](7)
    const body = await (await request).json()
    expect(body.state).toMatchObject({ status: 'completed', output: { poke: null, call: 7 } })
  })

  it('the client passes the option for start, startRun and signal', async () => {
    const url = await serve()
    const client = createEngineClient({ baseUrl: url })
    const plain = await client.start(slow)
    expect(plain.state.status).toBe('running')
    const waited = client.start(slow, undefined, { wait: 'settled' })
    await attempts(2)
    held[1]('second')
    expect((await waited).state).toMatchObject({ status: 'completed', output: { call: 'second' } })
    const byName = client.startRun({ kind: 'workflow', definitionName: 'poked', runId: 'p' })
    expect((await byName).state.status).toBe('running')
    const signalled = client.signal('p', [{ type: 'app.poke' }], { wait: 'settled' })
    await attempts(3)
    held[2]('third')
    expect((await signalled).state).toMatchObject({ status: 'completed' })
    held[0]('first')
  })
})
