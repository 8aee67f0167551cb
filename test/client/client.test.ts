import { afterEach, describe, expect, it } from 'vitest'
import { ClientError, createEngineClient } from '../../src/client/index.js'
import type { EventEnvelope } from '../../src/core/envelope.js'
import { serveHandler } from '../../src/http/server.js'
import type { Engine, ServerHandle } from '../../src/runtime/engine-types.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { appendRaw, countingStore, makeHandler, manualTimers } from '../http/helpers.js'
import { realEngine, release, START_RELEASE } from '../http/real-engine.js'
import { immediateTimers, inProcess } from './helpers.js'

const servers: ServerHandle[] = []
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

type Mode = 'in-process' | 'socket'

/** A real engine (its store's subscriptions counted) behind the handler with manual timers. */
function realHandler() {
  const { engine, store } = realEngine({ store: countingStore(memoryStore()) })
  engines.push(engine)
  const http = makeHandler(engine, { sse: { timers: manualTimers() } })
  return { engine, store, http }
}

async function setup(mode: Mode) {
  const { engine, store, http } = realHandler()
  const timers = immediateTimers()
  if (mode === 'in-process') {
    return {
      engine,
      store,
      http,
      timers,
      client: createEngineClient({ baseUrl: 'http://skein.local', fetch: inProcess(http), timers }),
    }
  }
  const server = await serveHandler(http.fetch, { port: 0, closeStreams: http.closeStreams })
  servers.push(server)
  return {
    engine,
    store,
    http,
    timers,
    client: createEngineClient({ baseUrl: `${server.url}/`, timers }),
  }
}

describe.each<Mode>(['in-process', 'socket'])('client (%s)', (mode) => {
  it('covers the request helpers', async () => {
    const { client } = await setup(mode)
    expect(await client.health()).toEqual({ ok: true })
    const input = { topic: 'a' }
    const started = await client.start(release, input, { runId: 'c1', idempotencyKey: 'start-1' })
    const tail = started.state.lastSeq
    expect(started).toMatchObject({ runId: 'c1', state: { status: 'running' } })
    expect(
      await client.start(release, input, { runId: 'c1', idempotencyKey: 'start-1' }),
    ).toMatchObject({ runId: 'c1', state: { lastSeq: tail } })
    expect((await client.getRun('c1')).state.runId).toBe('c1')
    // A keyed signal records its key (runtime.signal.received), then its event.
    const signalled = await client.signal('c1', [{ type: 'ping' }], { idempotencyKey: 'sig-1' })
    expect(signalled.state.lastSeq).toBe(tail + 2)
    expect(
      (await client.signal('c1', [{ type: 'ping' }], { idempotencyKey: 'sig-1' })).state.lastSeq,
    ).toBe(tail + 2)
    expect(
      (await client.getEvents('c1', { fromSeq: 2, limit: 2 })).events.map((e) => e.seq),
    ).toEqual([2, 3])
    expect((await client.wake('c1')).state.lastSeq).toBe(tail + 2)
    expect((await client.replayTo('c1', 2)).step?.seq).toBe(2)
    const pending = await client.project('c1', 'pendingApprovals')
    expect(pending).toMatchObject({ runId: 'c1', name: 'pendingApprovals' })
    expect((pending.value as { items: unknown[] }).items).toHaveLength(1)
    expect((await client.inspectRun('c1')).tail).toBe(tail + 2)
    expect((await client.listRuns()).runIds).toEqual(['c1'])
    expect((await client.listRunSummaries()).runs).toHaveLength(1)
    expect((await client.listThreads('c1')).threads.map((t) => t.threadId)).toEqual([
      started.threadId,
    ])
    expect((await client.listEffects('c1')).effects).toEqual([])
    const run = await client.startRun(START_RELEASE)
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
    const { client, store } = await setup(mode)
    const { state } = await client.startRun({ ...START_RELEASE, runId: 's1' })
    const last = state.lastSeq + 3
    const seen: number[] = []
    let resolve!: () => void
    const done = new Promise<void>((r) => (resolve = r))
    const stop = client.subscribeEvents(
      's1',
      (event: EventEnvelope) => {
        seen.push(event.seq)
        if (event.seq === last) resolve()
      },
      { fromSeq: 2 },
    )
    await appendRaw(store, 's1', ['a', 'b', 'c'])
    await done
    stop()
    expect(seen).toEqual(Array.from({ length: last - 1 }, (_, i) => i + 2))
    await expect.poll(() => store.subscriptions.active).toBe(0)
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
    const stream = client.stream(release, { topic: 'x' })
    expect(stream.runId).toMatch(/-/)
    const seqs: number[] = []
    for await (const event of stream) seqs.push(event.seq)
    const result = await stream.result
    expect(result).toMatchObject({ runId: stream.runId, state: { status: 'running' } })
    expect(seqs).toEqual(Array.from({ length: result.state.lastSeq }, (_, i) => i + 1))
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
    const { engine, store, http } = realHandler()
    const { state } = await engine.startRun({ ...START_RELEASE, runId: 'r1' })
    const last = state.lastSeq + 2
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
      if (e.seq === last) resolve()
    })
    await expect.poll(() => calls).toBeGreaterThanOrEqual(7)
    await appendRaw(store, 'r1', ['x', 'y'])
    await done
    stop()
    expect(seen).toEqual(Array.from({ length: last }, (_, i) => i + 1))
    expect(timers.delays).toEqual([100, 200, 400, 800, 1000, 1000])
    expect(lastIds[0]).toBe('0')
    // Connection 1 delivered seqs 1 and 2 before it dropped: every retry resumes after 2.
    expect(new Set(lastIds.slice(1))).toEqual(new Set(['2']))
  })
})

describe('the client against the real engine (workflow + approval)', () => {
  it('client streamRun and subscribeEvents against engine.fetch and engine.serve', async () => {
    const { engine } = realEngine()
    engines.push(engine)
    const local = createEngineClient({
      baseUrl: 'http://e',
      fetch: async (r) => (await engine.fetch(r))!,
    })
    const stream = local.streamRun({ ...START_RELEASE, input: { topic: 'x' } })
    const types: string[] = []
    for await (const event of stream) types.push(event.type)
    const result = await stream.result
    expect(result.runId).toBe(stream.runId)
    expect(types.length).toBe(result.state.lastSeq)
    expect(types).toContain('approval.requested')

    const server: ServerHandle = await engine.serve({ port: 0 })
    const client = createEngineClient({ baseUrl: server.url })
    const seen: string[] = []
    let resolve!: () => void
    const done = new Promise<void>((r) => (resolve = r))
    const stop = client.subscribeEvents(stream.runId, (e) => {
      seen.push(e.type)
      if (e.type === 'runtime.run.completed') resolve()
    })
    const pending = await client.project<{ items: Array<{ approvalId: string }> }>(
      stream.runId,
      'pendingApprovals',
    )
    const decided = await client.signal(stream.runId, [
      {
        type: 'approval.decided',
        payload: { approvalId: pending.value.items[0].approvalId, outcome: 'reject' },
      },
    ])
    expect(decided.state.status).toBe('completed')
    await done
    stop()
    expect(seen.slice(0, types.length)).toEqual(types)
    // stop() closes the server and any stream still open.
  })
})
