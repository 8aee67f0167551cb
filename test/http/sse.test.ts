import { describe, expect, it } from 'vitest'
import type { HandlerOptions } from '../../src/http/route-types.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { appendRaw, fakeEngine } from './fake-engine.js'
import {
  expectSeamlessStream,
  idsOf,
  json,
  makeHandler,
  manualTimers,
  sseReader,
} from './helpers.js'

const live = (path: string, headers: Record<string, string> = {}) =>
  json('GET', path, undefined, { accept: 'text/event-stream', ...headers })

async function setup(sse: HandlerOptions['sse'] = {}) {
  const store = memoryStore()
  const engine = fakeEngine(store)
  const timers = manualTimers()
  const http = makeHandler(engine, { sse: { timers, ...sse } })
  await engine.startRun({ kind: 'test', definitionName: 'echo', runId: 'r1' })
  return { store, engine, timers, http }
}

describe('SSE event streams', () => {
  it('writes the DESIGN §4 frame format and keepalives', async () => {
    const { http, timers } = await setup()
    const res = (await http.fetch(json('GET', '/runs/r1/events?live=true')))!
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(res.headers.get('cache-control')).toBe('no-cache')
    const reader = sseReader(res)
    await reader.until((t) => idsOf(t).length === 3)
    expect(reader.text.startsWith('retry: 1000\n: connected\n\n')).toBe(true)
    const frame = reader.text.split('\n\n')[2]
    const [id, data] = frame.split('\n')
    expect(id).toBe('id: 2')
    expect(JSON.parse(data.slice('data: '.length))).toMatchObject({
      seq: 2,
      runId: 'r1',
      type: 'echo.step',
    })
    timers.tick()
    await reader.until((t) => t.endsWith(': keepalive\n\n'))
    await reader.cancel()
    expect(timers.active).toBe(0)
  })

  it('resumes after Last-Event-ID (exclusive), else from fromSeq (inclusive)', async () => {
    const { http } = await setup()
    const byHeader = sseReader(
      (await http.fetch(live('/runs/r1/events?fromSeq=1', { 'last-event-id': '2' })))!,
    )
    await byHeader.until((t) => idsOf(t).includes(3))
    expect(idsOf(byHeader.text)).toEqual([3])
    const byQuery = sseReader((await http.fetch(live('/runs/r1/events?fromSeq=2')))!)
    await byQuery.until((t) => idsOf(t).includes(3))
    expect(idsOf(byQuery.text)).toEqual([2, 3])
    await byHeader.cancel()
    await byQuery.cancel()
  })

  it.each([
    ['last-event-id', 'abc'],
    ['last-event-id', '1.5'],
    ['last-event-id', '-1'],
  ])('rejects a non-integer %s (%s) with 400', async (name, value) => {
    const { http, engine } = await setup()
    const res = (await http.fetch(live('/runs/r1/events', { [name]: value })))!
    expect(res.status).toBe(400)
    expect((await res.json()).error.code).toBe('INVALID_REQUEST')
    expect(engine.subscriptions.active).toBe(0)
  })

  it('answers 404 for an unknown run without leaving a subscription', async () => {
    const { http, engine } = await setup()
    const res = (await http.fetch(live('/runs/ghost/events')))!
    expect(res.status).toBe(404)
    expect((await res.json()).error.code).toBe('RUN_NOT_FOUND')
    expect(engine.subscriptions.active).toBe(0)
  })

  it('has no gap or duplicate at the catch-up/live seam', async () => {
    const { http, store } = await setup({ pageSize: 2 })
    // Append between every catch-up page and after it.
    await expectSeamlessStream(store, async () => (await http.fetch(live('/runs/r1/events')))!, 5)
  })

  it('serves many subscribers of one run', async () => {
    const { http, store, engine } = await setup()
    const readers = await Promise.all(
      Array.from({ length: 20 }, async () =>
        sseReader((await http.fetch(live('/runs/r1/events')))!),
      ),
    )
    await appendRaw(store, 'r1', ['a', 'b'])
    for (const reader of readers) {
      await reader.until((t) => idsOf(t).includes(5))
      expect(idsOf(reader.text)).toEqual([1, 2, 3, 4, 5])
    }
    expect(engine.subscriptions.active).toBe(20)
    await Promise.all(readers.map((r) => r.cancel()))
    expect(engine.subscriptions.active).toBe(0)
  })

  it('disconnects a slow subscriber instead of buffering without bound', async () => {
    const { http, store, engine } = await setup({ maxBufferedEvents: 10 })
    const res = (await http.fetch(live('/runs/r1/events')))!
    const reader = sseReader(res)
    await reader.until((t) => idsOf(t).includes(3))
    // Nobody reads while 50 events arrive: the stream closes once 10 are queued.
    for (let i = 0; i < 50; i++) await appendRaw(store, 'r1', [`burst.${i}`])
    expect(engine.subscriptions.active).toBe(0)
    const text = await reader.rest()
    const ids = idsOf(text)
    expect(ids.length).toBeLessThan(53)
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1))
  })

  it('ends open streams on closeStreams and on request abort', async () => {
    const { http, engine } = await setup()
    const a = sseReader((await http.fetch(live('/runs/r1/events')))!)
    const controller = new AbortController()
    const bReq = new Request('http://x/runs/r1/events?live=true', { signal: controller.signal })
    const b = sseReader((await http.fetch(bReq))!)
    expect(engine.subscriptions.active).toBe(2)
    controller.abort()
    expect(engine.subscriptions.active).toBe(1)
    http.closeStreams()
    expect(engine.subscriptions.active).toBe(0)
    // The stream ends (nobody pulled the catch-up yet, so only the preamble was sent).
    expect(await a.rest()).toBe('retry: 1000\n: connected\n\n')
    await b.rest().catch(() => {})
  })
})

describe('streaming start', () => {
  const start = (body: unknown) => json('POST', '/runs', body, { accept: 'text/event-stream' })

  it('streams the initial wake then a done frame with the StartResult', async () => {
    const { http } = await setup()
    const res = (await http.fetch(start({ kind: 'test', definitionName: 'echo', runId: 's1' })))!
    expect(res.status).toBe(200)
    const text = await sseReader(res).rest()
    expect(idsOf(text)).toEqual([1, 2, 3])
    const done = text.split('\n\n').find((f) => f.startsWith('event: done'))!
    expect(JSON.parse(done.split('\ndata: ')[1])).toMatchObject({
      runId: 's1',
      state: { lastSeq: 3 },
    })
  })

  it('generates a runId when the body has none', async () => {
    const { http } = await setup()
    const text = await sseReader(
      (await http.fetch(start({ kind: 'test', definitionName: 'echo' })))!,
    ).rest()
    const done = JSON.parse(text.split('event: done\ndata: ')[1])
    expect(done.runId).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('answers a start that fails before any event with a JSON error and its status', async () => {
    const { http, engine } = await setup()
    const res = (await http.fetch(start({ kind: 'nope', definitionName: 'x' })))!
    expect(res.status).toBe(404)
    expect((await res.json()).error.code).toBe('DEFINITION_NOT_FOUND')
    expect(engine.subscriptions.active).toBe(0)
  })

  it('ends with an error frame when the start fails after events', async () => {
    const store = memoryStore()
    const engine = fakeEngine(store)
    // A start that writes its first event, then fails with an error full of internals.
    engine.startRun = async (args, hooks) => {
      await hooks?.onRunId?.(args.runId!)
      await appendRaw(store, args.runId!, ['run.started'])
      throw Object.assign(new Error('/secret/path exploded'), { stack: 'at /secret' })
    }
    const http = makeHandler(engine)
    const text = await sseReader(
      (await http.fetch(start({ kind: 'test', definitionName: 'echo', runId: 'e1' })))!,
    ).rest()
    expect(idsOf(text)).toEqual([1])
    expect(text).toContain(
      'event: error\ndata: {"error":{"code":"INTERNAL","message":"internal error"}}',
    )
    expect(text).not.toContain('secret')
  })
})
