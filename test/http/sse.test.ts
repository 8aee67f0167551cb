import { afterEach, describe, expect, it } from 'vitest'
import type { HandlerOptions } from '../../src/http/route-types.js'
import type { Engine } from '../../src/runtime/engine-types.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { faultyStore } from '../../src/testing/fault-store.js'
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

// The embed handler's live streams beyond the host contract (src/testing/http-contract/sse.ts):
// keepalives on the handler's timers, paging at the catch-up/live seam, many and slow
// subscribers, and that no request leaves a store subscription behind.

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

const live = (path: string, headers: Record<string, string> = {}) =>
  json('GET', path, undefined, { accept: 'text/event-stream', ...headers })

/** A real engine with run r1 parked on its gate; `tail` is r1's last seq. */
async function setup(sse: HandlerOptions['sse'] = {}) {
  const { engine, store } = realEngine({ store: countingStore(memoryStore()) })
  engines.push(engine)
  const timers = manualTimers()
  const http = makeHandler(engine, { sse: { timers, ...sse } })
  const { state } = await engine.startRun({ ...START_RELEASE, runId: 'r1' })
  return { store, engine, timers, http, tail: state.lastSeq, subscriptions: store.subscriptions }
}

describe('SSE event streams', () => {
  it('writes the documented frame format and keepalives', async () => {
    const { http, timers, tail } = await setup()
    const res = (await http.fetch(json('GET', '/runs/r1/events?live=true')))!
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(res.headers.get('cache-control')).toBe('no-cache')
    const reader = sseReader(res)
    await reader.until((t) => idsOf(t).length === tail)
    expect(reader.text.startsWith('retry: 1000\n: connected\n\n')).toBe(true)
    const frame = reader.text.split('\n\n')[2]
    const [id, data] = frame.split('\n')
    expect(id).toBe('id: 2')
    expect(JSON.parse(data.slice('data: '.length))).toMatchObject({
      seq: 2,
      runId: 'r1',
      type: 'runtime.thread.started',
    })
    timers.tick()
    await reader.until((t) => t.endsWith(': keepalive\n\n'))
    await reader.cancel()
    expect(timers.active).toBe(0)
  })

  it.each([
    ['last-event-id', 'abc'],
    ['last-event-id', '1.5'],
    ['last-event-id', '-1'],
  ])('rejects a non-integer %s (%s) with 400, leaving no subscription', async (name, value) => {
    const { http, subscriptions } = await setup()
    const res = (await http.fetch(live('/runs/r1/events', { [name]: value })))!
    expect(res.status).toBe(400)
    expect((await res.json()).error.code).toBe('INVALID_REQUEST')
    expect(subscriptions.active).toBe(0)
  })

  it('answers 404 for an unknown run without leaving a subscription', async () => {
    const { http, subscriptions } = await setup()
    const res = (await http.fetch(live('/runs/ghost/events')))!
    expect(res.status).toBe(404)
    expect((await res.json()).error.code).toBe('RUN_NOT_FOUND')
    expect(subscriptions.active).toBe(0)
  })

  it('has no gap or duplicate at the catch-up/live seam', async () => {
    const { http, store } = await setup({ pageSize: 2 })
    // Append between every catch-up page and after it.
    await expectSeamlessStream(store, async () => (await http.fetch(live('/runs/r1/events')))!, 5)
  })

  it('serves many subscribers of one run', async () => {
    const { http, store, subscriptions, tail } = await setup()
    const readers = await Promise.all(
      Array.from({ length: 20 }, async () =>
        sseReader((await http.fetch(live('/runs/r1/events')))!),
      ),
    )
    await appendRaw(store, 'r1', ['a', 'b'])
    for (const reader of readers) {
      await reader.until((t) => idsOf(t).includes(tail + 2))
      expect(idsOf(reader.text)).toEqual(Array.from({ length: tail + 2 }, (_, i) => i + 1))
    }
    expect(subscriptions.active).toBe(20)
    await Promise.all(readers.map((r) => r.cancel()))
    expect(subscriptions.active).toBe(0)
  })

  it('disconnects a slow subscriber instead of buffering without bound', async () => {
    const { http, store, subscriptions, tail } = await setup({ maxBufferedEvents: 10 })
    const res = (await http.fetch(live('/runs/r1/events')))!
    const reader = sseReader(res)
    await reader.until((t) => idsOf(t).includes(tail))
    // Nobody reads while 50 events arrive: the stream closes once 10 are queued.
    for (let i = 0; i < 50; i++) await appendRaw(store, 'r1', [`burst.${i}`])
    expect(subscriptions.active).toBe(0)
    const text = await reader.rest()
    const ids = idsOf(text)
    expect(ids.length).toBeLessThan(tail + 50)
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1))
  })

  it('ends open streams on closeStreams and on request abort', async () => {
    const { http, subscriptions } = await setup()
    const a = sseReader((await http.fetch(live('/runs/r1/events')))!)
    const controller = new AbortController()
    const bReq = new Request('http://x/runs/r1/events?live=true', { signal: controller.signal })
    const b = sseReader((await http.fetch(bReq))!)
    expect(subscriptions.active).toBe(2)
    controller.abort()
    expect(subscriptions.active).toBe(1)
    http.closeStreams()
    expect(subscriptions.active).toBe(0)
    // The stream ends (nobody pulled the catch-up yet, so only the preamble was sent).
    expect(await a.rest()).toBe('retry: 1000\n: connected\n\n')
    await b.rest().catch(() => {})
  })
})

describe('streaming start', () => {
  const start = (body: unknown) => json('POST', '/runs', body, { accept: 'text/event-stream' })

  it('answers a start that fails before any event with a JSON error, leaving no subscription', async () => {
    const { http, subscriptions } = await setup()
    const res = (await http.fetch(start({ kind: 'nope', definitionName: 'x' })))!
    expect(res.status).toBe(404)
    expect((await res.json()).error.code).toBe('DEFINITION_NOT_FOUND')
    expect(subscriptions.active).toBe(0)
  })

  it('ends with an error frame when the start fails after events', async () => {
    // The store fails the start's second write (its effect's outcome) with an error full of
    // internals.
    let appends = 0
    const store = faultyStore(memoryStore(), (call) =>
      call.method === 'append' && call.args[0] === 'e1' && ++appends === 2
        ? {
            when: 'before',
            error: Object.assign(new Error('/secret/path exploded'), { stack: 'at /secret' }),
          }
        : undefined,
    )
    const { engine } = realEngine({ store })
    engines.push(engine)
    const http = makeHandler(engine)
    const text = await sseReader(
      (await http.fetch(start({ kind: 'workflow', definitionName: 'broken', runId: 'e1' })))!,
    ).rest()
    expect(idsOf(text).length).toBeGreaterThan(0)
    expect(idsOf(text)).toEqual((await store.read('e1')).map((e) => e.seq))
    expect(text).toContain(
      'event: error\ndata: {"error":{"code":"INTERNAL","message":"internal error"}}',
    )
    expect(text).not.toContain('secret')
  })
})
