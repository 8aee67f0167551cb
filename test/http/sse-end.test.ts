import { createEngineClient } from 'skein/client'
import { afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import type { Engine } from '../../src/runtime/engine-types.js'
import { sseReader } from './helpers.js'
import { realEngine, START_RELEASE } from './real-engine.js'

// The live stream of a finished run never ended, so `curl -N` and UIs could not
// stop. After the terminal event has been delivered the stream ends with
// `event: end` / `data: { runId, status, lastSeq }`. A parked run's stream stays open.
// The end frame over HTTP is a case of the host contract (src/testing/http-contract/sse.ts);
// here: a cancelled run (cancel is an embed method), the client and the CLI.

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
})
