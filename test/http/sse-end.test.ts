import { createEngineClient } from 'skein/client'
import { afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import type { Engine } from '../../src/runtime/engine-types.js'
import { idsOf, json, sseReader } from './helpers.js'
import { realEngine, START_RELEASE } from './real-engine.js'

// Issue 25: the live stream of a finished run never ended, so `curl -N` and UIs could not
// stop. After the terminal event has been delivered the stream ends with
// `event: end` / `data: { runId, status, lastSeq }`. A parked run's stream stays open.

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

function setup() {
  const subject = realEngine()
  engines.push(subject.engine)
  return subject.engine
}

const live = (runId: string, headers: Record<string, string> = {}) =>
  new Request(`http://x/runs/${runId}/events?live=true`, { headers })

/** Starts `release` (parks on its gate) and returns a function that approves or rejects it. */
async function parked(engine: Engine, runId: string) {
  await engine.startRun({ ...START_RELEASE, runId })
  const { items } = await engine.project<{ items: Array<{ approvalId: string }> }>(
    runId,
    'pendingApprovals',
  )
  return (outcome: 'approve' | 'reject') =>
    engine.signal(runId, [
      { type: 'approval.decided', payload: { approvalId: items[0].approvalId, outcome } },
    ])
}

const endOf = (text: string) => {
  const frames = text.split('\n\n').filter((f) => f.startsWith('event: end\n'))
  expect(frames).toHaveLength(1)
  return JSON.parse(frames[0].slice('event: end\ndata: '.length))
}

describe('the end of a finished run’s live stream', () => {
  it('a live stream ends with an end frame right after the terminal event', async () => {
    const engine = setup()
    const decide = await parked(engine, 'w1')
    const reader = sseReader((await engine.fetch(live('w1')))!)
    const parkedAt = (await engine.getRun('w1')).lastSeq
    await reader.until((t) => idsOf(t).includes(parkedAt))
    const done = await decide('approve')
    expect(done.status).toBe('completed')
    const text = await reader.rest()
    expect(idsOf(text)).toEqual(Array.from({ length: done.lastSeq }, (_, i) => i + 1))
    const events = await engine.getEvents('w1')
    const terminal = events.find((e) => e.type === 'runtime.run.completed')!
    expect(
      text.endsWith(
        `event: end\ndata: ${JSON.stringify({ runId: 'w1', status: 'completed', lastSeq: done.lastSeq })}\n\n`,
      ),
    ).toBe(true)
    expect(terminal.seq).toBeLessThanOrEqual(done.lastSeq)
  })

  it('a stream of a run that finished earlier catches up, then ends', async () => {
    const engine = setup()
    const decide = await parked(engine, 'w2')
    const done = await decide('reject')
    const text = await sseReader((await engine.fetch(live('w2')))!).rest()
    expect(idsOf(text)).toEqual(Array.from({ length: done.lastSeq }, (_, i) => i + 1))
    expect(endOf(text)).toEqual({ runId: 'w2', status: 'completed', lastSeq: done.lastSeq })
  })

  it('a resume after the last event ends at once', async () => {
    const engine = setup()
    const done = await (await parked(engine, 'w3'))('approve')
    const text = await sseReader(
      (await engine.fetch(live('w3', { 'last-event-id': String(done.lastSeq) })))!,
    ).rest()
    expect(idsOf(text)).toEqual([])
    expect(endOf(text)).toEqual({ runId: 'w3', status: 'completed', lastSeq: done.lastSeq })
  })

  it('says how a cancelled or failed run finished', async () => {
    const engine = setup()
    await parked(engine, 'c1')
    const cancelled = await engine.cancel('c1')
    expect(endOf(await sseReader((await engine.fetch(live('c1')))!).rest())).toEqual({
      runId: 'c1',
      status: 'cancelled',
      lastSeq: cancelled.lastSeq,
    })
    const failed = await engine.startRun({
      kind: 'workflow',
      definitionName: 'broken',
      runId: 'f1',
    })
    expect(failed.state.status).toBe('failed')
    expect(endOf(await sseReader((await engine.fetch(live('f1')))!).rest())).toMatchObject({
      runId: 'f1',
      status: 'failed',
    })
  })

  it('a parked run’s stream does not end', async () => {
    const engine = setup()
    await parked(engine, 'p1')
    const reader = sseReader((await engine.fetch(live('p1')))!)
    const tail = (await engine.getRun('p1')).lastSeq
    await reader.until((t) => idsOf(t).includes(tail))
    // Events keep coming to a running run: each arrives, and the stream stays open.
    await engine.signal('p1', [{ type: 'app.note', payload: { n: 1 } }])
    await reader.until((t) => idsOf(t).includes(tail + 1))
    expect(reader.text).not.toContain('event: end')
    await reader.cancel()
  })

  it('ends the response on the socket, so curl -N returns', async () => {
    const engine = setup()
    const done = await (await parked(engine, 's1'))('approve')
    const server = await engine.serve({ port: 0 })
    const res = await fetch(`${server.url}/runs/s1/events?live=true`)
    const text = await res.text()
    expect(endOf(text)).toEqual({ runId: 's1', status: 'completed', lastSeq: done.lastSeq })
  })

  it('subscribeEvents reports the end and does not reconnect', async () => {
    const engine = setup()
    const decide = await parked(engine, 'k1')
    let connections = 0
    const client = createEngineClient({
      baseUrl: 'http://x',
      fetch: async (request) => {
        connections++
        return (await engine.fetch(request))!
      },
    })
    const seen: number[] = []
    const ended = new Promise((resolve) => {
      client.subscribeEvents('k1', (event) => seen.push(event.seq), { onEnd: resolve })
    })
    const done = await decide('approve')
    expect(await ended).toEqual({ runId: 'k1', status: 'completed', lastSeq: done.lastSeq })
    expect(seen).toEqual(Array.from({ length: done.lastSeq }, (_, i) => i + 1))
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(connections).toBe(1)
  })

  it('`skein events --follow` returns for a run that finished before the cursor', async () => {
    const engine = setup()
    const done = await (await parked(engine, 'cli1'))('approve')
    const server = await engine.serve({ port: 0 })
    let stdout = ''
    const code = await runCli(
      ['events', 'cli1', '--follow', '--from', String(done.lastSeq + 1), '--url', server.url],
      { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: () => {} } },
    )
    expect(code).toBe(0)
    expect(stdout).toBe('')
  })

  it('the end frame is part of the documented wire format (no id: it never moves the cursor)', async () => {
    const engine = setup()
    const done = await (await parked(engine, 'wire1'))('approve')
    const res = (await engine.fetch(json('GET', '/runs/wire1/events?live=true')))!
    const text = await sseReader(res).rest()
    const frame = text.split('\n\n').find((f) => f.startsWith('event: end'))!
    expect(frame.split('\n')).toEqual([
      'event: end',
      `data: {"runId":"wire1","status":"completed","lastSeq":${done.lastSeq}}`,
    ])
  })
})
