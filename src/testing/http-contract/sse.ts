import { describe, expect } from 'vitest'
import { failing } from '../engine-contract/definitions.js'
import type { HostCase, HostWorld } from './host-world.js'
import { START_RELEASE } from './samples.js'
import { idsOf, namedFrame, sseReader } from './sse-reader.js'

/** The data of the stream's one end frame. */
const endOf = (text: string) => {
  expect(text.split('\n\n').filter((f) => f.startsWith('event: end\n'))).toHaveLength(1)
  return namedFrame(text, 'end')
}

const LIVE = { accept: 'text/event-stream' }

async function stream(w: HostWorld, path: string, headers: Record<string, string> = LIVE) {
  const res = (await w.request(path, { headers }))!
  expect(res.status).toBe(200)
  return sseReader(res)
}

/** Starts `release` as `runId` (parked on its gate) and returns its last seq. */
async function parked(w: HostWorld, runId: string): Promise<number> {
  const started = await w.call('POST', '/runs', { ...START_RELEASE, runId })
  return started.body.state.lastSeq
}

async function decide(w: HostWorld, runId: string, outcome: 'approve' | 'reject') {
  const { value } = (await w.call('GET', `/runs/${runId}/projections/pendingApprovals`)).body
  const payload = { approvalId: value.items[0].approvalId, outcome }
  return (
    await w.call('POST', `/runs/${runId}/events`, {
      events: [{ type: 'approval.decided', payload }],
    })
  ).body.state
}

/** Live event streams (docs/http.md, "Server-sent events") and the streaming start. */
export function sseCases(test: HostCase): void {
  describe('server-sent events', () => {
    test('writes the frame format: headers, preamble, then one frame per event', async (w) => {
      await w.boot()
      const tail = await parked(w, 'r1')
      for (const [path, headers] of [
        ['/runs/r1/events?live=true', {}],
        ['/runs/r1/events', LIVE],
      ] as const) {
        const res = (await w.request(path, { headers }))!
        expect(res.status).toBe(200)
        expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
        expect(res.headers.get('cache-control')).toBe('no-cache')
        const reader = sseReader(res)
        await reader.until((t) => idsOf(t).includes(tail))
        expect(reader.text.startsWith('retry: 1000\n: connected\n\n')).toBe(true)
        expect(idsOf(reader.text)).toEqual(Array.from({ length: tail }, (_, i) => i + 1))
        const [id, data] = reader.text.split('\n\n')[2].split('\n')
        expect(id).toBe('id: 2')
        expect(JSON.parse(data.slice('data: '.length))).toMatchObject({
          seq: 2,
          runId: 'r1',
          type: 'runtime.thread.started',
        })
        await reader.cancel()
      }
    })

    test('resumes after Last-Event-ID (exclusive), else from fromSeq (inclusive)', async (w) => {
      await w.boot()
      const tail = await parked(w, 'r1')
      const byHeader = await stream(w, '/runs/r1/events?fromSeq=1', {
        ...LIVE,
        'last-event-id': '2',
      })
      await byHeader.until((t) => idsOf(t).includes(tail))
      expect(idsOf(byHeader.text)).toEqual(Array.from({ length: tail - 2 }, (_, i) => i + 3))
      const byQuery = await stream(w, '/runs/r1/events?fromSeq=2')
      await byQuery.until((t) => idsOf(t).includes(tail))
      expect(idsOf(byQuery.text)).toEqual(Array.from({ length: tail - 1 }, (_, i) => i + 2))
      await byHeader.cancel()
      await byQuery.cancel()
    })

    test('refuses a non-integer Last-Event-ID or fromSeq with 400, and an unknown run with 404', async (w) => {
      await w.boot()
      await parked(w, 'r1')
      for (const [path, headers] of [
        ['/runs/r1/events', { 'last-event-id': 'abc' }],
        ['/runs/r1/events', { 'last-event-id': '1.5' }],
        ['/runs/r1/events', { 'last-event-id': '-1' }],
        ['/runs/r1/events?fromSeq=1e3', {}],
      ] as const) {
        const res = await w.call('GET', path, undefined, { ...LIVE, ...headers })
        expect([res.status, res.body.error.code], `${path} ${JSON.stringify(headers)}`).toEqual([
          400,
          'INVALID_REQUEST',
        ])
      }
      const ghost = await w.call('GET', '/runs/ghost/events', undefined, LIVE)
      expect([ghost.status, ghost.body.error.code]).toEqual([404, 'RUN_NOT_FOUND'])
    })

    test('a live stream ends with an end frame right after the terminal event', async (w) => {
      await w.boot()
      const tail = await parked(w, 'w1')
      const reader = await stream(w, '/runs/w1/events?live=true', {})
      await reader.until((t) => idsOf(t).includes(tail))
      const done = await decide(w, 'w1', 'approve')
      expect(done.status).toBe('completed')
      const text = await reader.rest()
      expect(idsOf(text)).toEqual(Array.from({ length: done.lastSeq }, (_, i) => i + 1))
      const { events } = (await w.call('GET', '/runs/w1/events')).body
      const terminal = events.find((e: any) => e.type === 'runtime.run.completed')
      const end = JSON.stringify({ runId: 'w1', status: 'completed', lastSeq: done.lastSeq })
      expect(text.endsWith(`event: end\ndata: ${end}\n\n`)).toBe(true)
      expect(terminal.seq).toBeLessThanOrEqual(done.lastSeq)
    })

    test('a stream of a run that finished earlier catches up, then ends', async (w) => {
      await w.boot()
      await parked(w, 'w2')
      const done = await decide(w, 'w2', 'reject')
      const text = await (await stream(w, '/runs/w2/events')).rest()
      expect(idsOf(text)).toEqual(Array.from({ length: done.lastSeq }, (_, i) => i + 1))
      expect(endOf(text)).toEqual({ runId: 'w2', status: 'completed', lastSeq: done.lastSeq })
    })

    test('a resume after the last event ends at once', async (w) => {
      await w.boot()
      await parked(w, 'w3')
      const done = await decide(w, 'w3', 'approve')
      const resume = { ...LIVE, 'last-event-id': String(done.lastSeq) }
      const text = await (await stream(w, '/runs/w3/events', resume)).rest()
      expect(idsOf(text)).toEqual([])
      expect(endOf(text)).toEqual({ runId: 'w3', status: 'completed', lastSeq: done.lastSeq })
    })

    test('says how a failed run finished', async (w) => {
      await w.boot()
      const failed = await w.call('POST', '/runs', {
        kind: 'workflow',
        definitionName: failing.name,
        runId: 'f1',
      })
      expect(failed.body.state.status).toBe('failed')
      expect(endOf(await (await stream(w, '/runs/f1/events')).rest())).toEqual({
        runId: 'f1',
        status: 'failed',
        lastSeq: failed.body.state.lastSeq,
      })
    })

    test('a parked run’s stream does not end', async (w) => {
      await w.boot()
      const tail = await parked(w, 'p1')
      const reader = await stream(w, '/runs/p1/events')
      await reader.until((t) => idsOf(t).includes(tail))
      // Events keep coming to a running run: each arrives, and the stream stays open.
      await w.call('POST', '/runs/p1/events', { events: [{ type: 'app.note', payload: { n: 1 } }] })
      await reader.until((t) => idsOf(t).includes(tail + 1))
      expect(reader.text).not.toContain('event: end')
      await reader.cancel()
    })

    test('the end frame is part of the documented wire format (no id: it never moves the cursor)', async (w) => {
      await w.boot()
      await parked(w, 'wire1')
      const done = await decide(w, 'wire1', 'approve')
      const text = await (await stream(w, '/runs/wire1/events?live=true', {})).rest()
      const frame = text.split('\n\n').find((f) => f.startsWith('event: end'))!
      expect(frame.split('\n')).toEqual([
        'event: end',
        `data: {"runId":"wire1","status":"completed","lastSeq":${done.lastSeq}}`,
      ])
    })
  })

  describe('streaming start', () => {
    const start = (w: HostWorld, body: unknown) =>
      w.request('/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...LIVE },
        body: JSON.stringify(body),
      })

    test('streams the initial wake, then a done frame with the StartResult', async (w) => {
      await w.boot()
      const res = (await start(w, { ...START_RELEASE, runId: 's1' }))!
      expect(res.status).toBe(200)
      const text = await sseReader(res).rest()
      const done = namedFrame(text, 'done')
      expect(done).toMatchObject({ runId: 's1', state: { status: 'running' } })
      expect(idsOf(text)).toEqual(Array.from({ length: done.state.lastSeq }, (_, i) => i + 1))
      expect((await w.call('GET', '/runs/s1')).body.state).toEqual(done.state)
    })

    test('names the run when the body has no runId', async (w) => {
      await w.boot()
      const text = await sseReader((await start(w, START_RELEASE))!).rest()
      const { runId } = namedFrame(text, 'done')
      expect(typeof runId).toBe('string')
      expect((await w.call('GET', `/runs/${encodeURIComponent(runId)}`)).status).toBe(200)
    })

    test('answers a start that fails before any event with a JSON error and its status', async (w) => {
      await w.boot()
      const res = (await start(w, { kind: 'nope', definitionName: 'x' }))!
      expect(res.status).toBe(404)
      expect((await res.json()).error.code).toBe('DEFINITION_NOT_FOUND')
    })
  })
}
