import { describe, expect } from 'vitest'
import type { HostCase } from './host-case.js'
import type { HostWorld } from './host-world.js'
import { START_RELEASE } from './samples.js'
import { idsOf, namedFrame, sseReader } from './sse-reader.js'

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

async function approve(w: HostWorld, runId: string) {
  const { value } = (await w.call('GET', `/runs/${runId}/projections/pendingApprovals`)).body
  const payload = { approvalId: value.items[0].approvalId, outcome: 'approve' }
  return (
    await w.call('POST', `/runs/${runId}/events`, {
      events: [{ type: 'approval.decided', payload }],
    })
  ).body.state
}

/** Live event streams (DESIGN §4 "SSE") and the streaming start. */
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
      expect(idsOf(byHeader.text)[0]).toBe(3)
      const byQuery = await stream(w, '/runs/r1/events?fromSeq=2')
      await byQuery.until((t) => idsOf(t).includes(tail))
      expect(idsOf(byQuery.text)[0]).toBe(2)
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

    test('delivers live events, then an end frame once the run finishes, and ends', async (w) => {
      await w.boot()
      const tail = await parked(w, 'r1')
      const reader = await stream(w, '/runs/r1/events')
      await reader.until((t) => idsOf(t).includes(tail))
      const done = await approve(w, 'r1')
      expect(done.status).toBe('completed')
      const text = await reader.rest()
      expect(idsOf(text)).toEqual(Array.from({ length: done.lastSeq }, (_, i) => i + 1))
      expect(namedFrame(text, 'end')).toEqual({
        runId: 'r1',
        status: 'completed',
        lastSeq: done.lastSeq,
      })
      expect(text.endsWith('\n\n')).toBe(true)
    })

    test('a stream of a finished run catches up, then ends; a resume past the end gets the end frame', async (w) => {
      await w.boot()
      await parked(w, 'r1')
      const done = await approve(w, 'r1')
      const caught = await (await stream(w, '/runs/r1/events?fromSeq=3')).rest()
      expect(idsOf(caught)).toEqual(Array.from({ length: done.lastSeq - 2 }, (_, i) => i + 3))
      const end = { runId: 'r1', status: 'completed', lastSeq: done.lastSeq }
      expect(namedFrame(caught, 'end')).toEqual(end)
      const resumed = await (
        await stream(w, '/runs/r1/events', { ...LIVE, 'last-event-id': String(done.lastSeq) })
      ).rest()
      expect(idsOf(resumed)).toEqual([])
      expect(namedFrame(resumed, 'end')).toEqual(end)
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
