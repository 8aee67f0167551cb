import { afterEach, describe, expect, it } from 'vitest'
import { ClientError, createEngineClient } from '../../src/client/index.js'
import type { EventEnvelope } from '../../src/core/envelope.js'
import { serveHandler } from '../../src/http/server.js'
import type { ServerHandle } from '../../src/runtime/engine-types.js'
import { appendRaw, fakeEngine } from '../http/fake-engine.js'
import { makeHandler, manualTimers } from '../http/helpers.js'
import { immediateTimers, inProcess } from './helpers.js'

const servers: ServerHandle[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

type Mode = 'in-process' | 'socket'

async function setup(mode: Mode) {
  const engine = fakeEngine()
  const http = makeHandler(engine, { sse: { timers: manualTimers() } })
  const timers = immediateTimers()
  if (mode === 'in-process') {
    return {
      engine,
      http,
      timers,
      client: createEngineClient({ baseUrl: 'http://skein.local', fetch: inProcess(http), timers }),
    }
  }
  const server = await serveHandler(http.fetch, { port: 0, closeStreams: http.closeStreams })
  servers.push(server)
  return { engine, http, timers, client: createEngineClient({ baseUrl: `${server.url}/`, timers }) }
}

const echo = { kind: 'test', name: 'echo', version: '1' }

describe.each<Mode>(['in-process', 'socket'])('client (%s)', (mode) => {
  it('covers the request helpers', async () => {
    const { client } = await setup(mode)
    expect(await client.health()).toEqual({ ok: true })
    const started = await client.start(echo, { a: 1 }, { runId: 'c1', idempotencyKey: 'start-1' })
    expect(started).toMatchObject({ runId: 'c1', state: { lastSeq: 3 } })
    expect(
      await client.start(echo, { a: 1 }, { runId: 'c1', idempotencyKey: 'start-1' }),
    ).toMatchObject({ runId: 'c1' })
    expect((await client.getRun('c1')).state.runId).toBe('c1')
    const signalled = await client.signal('c1', [{ type: 'ping' }], { idempotencyKey: 'sig-1' })
    expect(signalled.state.lastSeq).toBe(4)
    expect(
      (await client.signal('c1', [{ type: 'ping' }], { idempotencyKey: 'sig-1' })).state.lastSeq,
    ).toBe(4)
    expect(
      (await client.getEvents('c1', { fromSeq: 2, limit: 2 })).events.map((e) => e.seq),
    ).toEqual([2, 3])
    expect((await client.wake('c1')).state.lastSeq).toBe(4)
    expect((await client.replayTo('c1', 2)).step?.seq).toBe(2)
    expect(await client.project('c1', 'count')).toEqual({ runId: 'c1', name: 'count', value: 4 })
    expect((await client.inspectRun('c1')).tail).toBe(4)
    expect((await client.listRuns()).runIds).toEqual(['c1'])
    expect((await client.listRunSummaries()).runs).toHaveLength(1)
    expect((await client.listThreads('c1')).threads).toEqual([])
    expect((await client.listEffects('c1')).effects).toEqual([])
    const run = await client.startRun({ kind: 'test', definitionName: 'echo' })
    expect(run.runId).toMatch(/-/)
  })

  it('rejects non-2xx with ClientError { status, code, message, details }', async () => {
    const { client } = await setup(mode)
    const error = await client.getRun('ghost').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ClientError)
    expect(error).toMatchObject({
      status: 404,
      code: 'RUN_NOT_FOUND',
      message: 'run ghost not found',
      details: { runId: 'ghost' },
    })
    const closed = await client.rescanDeadlines().catch((e: unknown) => e)
    expect(closed).toMatchObject({ status: 503, code: 'NOT_CONFIGURED' })
    const weird = await client.getRun('a/b').catch((e: unknown) => e)
    expect(weird).toMatchObject({ status: 400, code: 'INVALID_REQUEST' })
  })

  it('subscribeEvents delivers catch-up then live events, from fromSeq', async () => {
    const { client, engine } = await setup(mode)
    await client.startRun({ kind: 'test', definitionName: 'echo', runId: 's1' })
    const seen: number[] = []
    let resolve!: () => void
    const done = new Promise<void>((r) => (resolve = r))
    const stop = client.subscribeEvents(
      's1',
      (event: EventEnvelope) => {
        seen.push(event.seq)
        if (event.seq === 6) resolve()
      },
      { fromSeq: 2 },
    )
    await appendRaw(await engine.store, 's1', ['a', 'b', 'c'])
    await done
    stop()
    expect(seen).toEqual([2, 3, 4, 5, 6])
    await expect.poll(() => engine.subscriptions.active).toBe(0)
  })

  it('subscribeEvents stops on a permanent error and reports it', async () => {
    const { client } = await setup(mode)
    const error = await new Promise((resolve) => {
      client.subscribeEvents('ghost', () => {}, {
        onError: (e, info) => !info.retrying && resolve(e),
      })
    })
    expect(error).toMatchObject({ status: 404, code: 'RUN_NOT_FOUND' })
  })

  it('stream() yields the initial wake events and exposes runId and result', async () => {
    const { client } = await setup(mode)
    const stream = client.stream(echo, { x: 1 })
    expect(stream.runId).toMatch(/-/)
    const seqs: number[] = []
    for await (const event of stream) seqs.push(event.seq)
    expect(seqs).toEqual([1, 2, 3])
    expect(await stream.result).toMatchObject({ runId: stream.runId, state: { lastSeq: 3 } })
  })

  it('streamRun() rejects with ClientError for a start that fails', async () => {
    const { client } = await setup(mode)
    const stream = client.streamRun({ kind: 'nope', definitionName: 'x', runId: 'bad' })
    const error = await (async () => {
      for await (const _ of stream) {
        // no events expected
      }
    })().catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 404, code: 'DEFINITION_NOT_FOUND' })
    await expect(stream.result).rejects.toMatchObject({ code: 'DEFINITION_NOT_FOUND' })
  })
})

describe('subscribeEvents reconnects', () => {
  it('backs off exponentially on failures and resumes from its last seq', async () => {
    const engine = fakeEngine()
    const http = makeHandler(engine, { sse: { timers: manualTimers() } })
    await engine.startRun({ kind: 'test', definitionName: 'echo', runId: 'r1' })
    const timers = immediateTimers()
    const lastIds: Array<string | null> = []
    let calls = 0
    const client = createEngineClient({
      baseUrl: 'http://x',
      timers,
      random: () => 1, // no jitter: delays are exactly the doubling sequence
      reconnect: { initialDelayMs: 100, maxDelayMs: 1000 },
      fetch: async (request) => {
        calls++
        lastIds.push(request.headers.get('last-event-id'))
        // Connection 1 works; 2–6 fail (network, 503s); 7 works.
        if (calls >= 2 && calls <= 4) throw new TypeError('fetch failed')
        if (calls === 5 || calls === 6) return new Response('busy', { status: 503 })
        const res = (await http.fetch(request))!
        if (calls === 1) {
          // Deliver a little, then drop.
          const reader = res.body!.getReader()
          let sent = 0
          return new Response(
            new ReadableStream({
              async pull(c) {
                const { value, done } = await reader.read()
                if (done || sent++ > 2) {
                  reader.cancel()
                  return c.close()
                }
                c.enqueue(value)
              },
            }),
            { headers: res.headers },
          )
        }
        return res
      },
    })
    const seen: number[] = []
    let resolve!: () => void
    const done = new Promise<void>((r) => (resolve = r))
    const stop = client.subscribeEvents('r1', (e) => {
      seen.push(e.seq)
      if (e.seq === 5) resolve()
    })
    await expect.poll(() => calls).toBeGreaterThanOrEqual(7)
    await appendRaw(await engine.store, 'r1', ['x', 'y'])
    await done
    stop()
    expect(seen).toEqual([1, 2, 3, 4, 5])
    expect(timers.delays).toEqual([100, 200, 400, 800, 1000, 1000])
    expect(lastIds[0]).toBe('0')
    // Connection 1 delivered seqs 1 and 2 before it dropped: every retry resumes after 2.
    expect(new Set(lastIds.slice(1))).toEqual(new Set(['2']))
  })
})
