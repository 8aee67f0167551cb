import { createEngine, type Engine, type Ids } from 'skein'
import { approval } from 'skein/approval'
import { createEngineClient } from 'skein/client'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { defaultIds } from '../../src/runtime/system.js'
import { json, sseReader } from './helpers.js'
import { release, START_RELEASE } from './real-engine.js'

// A streaming start (POST /runs with Accept: text/event-stream) made its run id in
// the route, without the `run_` prefix a plain start gets. One format, made by the engine's Ids.

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

function engineWith(ids?: Ids) {
  const engine = createEngine({
    modules: [workflow({ definitions: [release] }), approval()],
    ...(ids ? { ids } : {}),
  })
  engines.push(engine)
  return engine
}

const doneOf = (text: string) => JSON.parse(text.split('event: done\ndata: ')[1].split('\n')[0])

async function streamingStart(engine: Engine, body: unknown) {
  const res = (await engine.fetch(json('POST', '/runs', body, { accept: 'text/event-stream' })))!
  expect(res.headers.get('content-type')).toContain('text/event-stream')
  return doneOf(await sseReader(res).rest())
}

describe('one run-id format', () => {
  it('a streaming start gets the same kind of id as a plain start', async () => {
    const engine = engineWith()
    const plain = await (await engine.fetch(json('POST', '/runs', START_RELEASE)))!.json()
    const streamed = await streamingStart(engine, START_RELEASE)
    expect(plain.runId).toMatch(
      /^run_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    )
    expect(streamed.runId).toMatch(
      /^run_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    )
    expect(streamed.runId).not.toBe(plain.runId)
    expect((await engine.getRun(streamed.runId)).status).toBe('running')
  })

  it("a streaming start's id is made by the engine's Ids, not by the route", async () => {
    let n = 0
    const engine = engineWith({ ...defaultIds(), runId: () => `order-${++n}` })
    const streamed = await streamingStart(engine, START_RELEASE)
    expect(streamed.runId).toBe('order-1')
    const events = await engine.getEvents('order-1')
    expect(events.map((e) => e.runId)).toEqual(events.map(() => 'order-1'))
    expect(events[0].type).toBe('runtime.run.started')
  })

  it("the client's streamRun uses the engine's format too", async () => {
    const engine = engineWith()
    const client = createEngineClient({
      baseUrl: 'http://e',
      fetch: async (r) => (await engine.fetch(r))!,
    })
    const stream = client.streamRun(START_RELEASE)
    expect(stream.runId).toMatch(/^run_[0-9a-f-]{36}$/)
    const types: string[] = []
    for await (const event of stream) types.push(event.type)
    expect(types[0]).toBe('runtime.run.started')
    expect((await stream.result).runId).toBe(stream.runId)
  })
})
