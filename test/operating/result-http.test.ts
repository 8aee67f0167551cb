// The HTTP side of results over a real server: the long-poll `GET /runs/:id?wait=terminal`,
// `client.result`, and `skein wait` (its output and exit codes).
import { createEngine, type Engine, type ServerHandle } from 'skein'
import { type ClientError, createEngineClient } from 'skein/client'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import { breaks, waits } from './result-workflows.js'

let engine: Engine
let server: ServerHandle
afterEach(async () => {
  await server?.close()
  await engine?.stop()
})

async function serve() {
  engine = createEngine({ modules: [workflow({ definitions: [waits, breaks] })] })
  server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
  return createEngineClient({ baseUrl: server.url })
}
const go = [{ type: 'app.go', payload: { ok: 42 } }]

async function cli(args: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: { SKEIN_URL: server.url },
  })
  return { code, stdout, stderr }
}

describe('results over HTTP', () => {
  it('holds GET /runs/:id?wait=terminal until the run finishes', async () => {
    const client = await serve()
    const { runId } = await engine.start(waits)
    const held = fetch(`${server.url}/runs/${runId}?wait=terminal&timeoutMs=20000`)
    let answered = false
    void held.then(() => (answered = true))
    await engine.getRun(runId)
    await new Promise((r) => setTimeout(r, 50))
    expect(answered).toBe(false)
    await engine.signal(runId, go)
    const body = (await (await held).json()) as { state: { status: string } }
    expect(body.state.status).toBe('completed')
    expect(await client.result(runId)).toEqual((await engine.getRun(runId)).output)
  })

  it('answers the running state when the long-poll times out; bad parameters are 400', async () => {
    await serve()
    const { runId } = await engine.start(waits)
    const res = await fetch(`${server.url}/runs/${runId}?wait=terminal&timeoutMs=20`)
    expect(res.status).toBe(200)
    expect(((await res.json()) as { state: { status: string } }).state.status).toBe('running')
    for (const query of [
      'wait=settled',
      'wait=terminal&wait=terminal',
      'timeoutMs=10',
      'wait=terminal&timeoutMs=60001',
      'wait=terminal&timeoutMs=-1',
      'wait=terminal&other=1',
    ]) {
      const bad = await fetch(`${server.url}/runs/${runId}?${query}`)
      expect([query, bad.status]).toEqual([query, 400])
    }
  })

  it('client.result rejects with the run failure and with RESULT_TIMEOUT', async () => {
    const client = await serve()
    const failing = await engine.start(breaks)
    const failed = client.result(failing.runId).catch((e: ClientError) => e)
    await engine.signal(failing.runId, go)
    const error = (await failed) as ClientError
    expect(error.code).toBe('RUN_FAILED')
    expect((error.details as { error: unknown }).error).toEqual(
      (await engine.getRun(failing.runId)).error,
    )
    const { runId } = await engine.start(waits)
    const late = (await client.result(runId, { timeoutMs: 30 }).catch((e) => e)) as ClientError
    expect(late.code).toBe('RESULT_TIMEOUT')
  })

  it('skein wait prints the output, exits 1 on a failed run and 124 on a timeout', async () => {
    await serve()
    const { runId } = await engine.start(waits)
    const waiting = cli(['wait', runId])
    await engine.getRun(runId)
    await engine.signal(runId, go)
    const done = await waiting
    expect(done.code).toBe(0)
    expect(JSON.parse(done.stdout)).toEqual((await engine.getRun(runId)).output)

    const failing = await engine.start(breaks)
    await engine.signal(failing.runId, go)
    const failed = await cli(['wait', failing.runId])
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain('RUN_FAILED')
    expect(failed.stderr).toContain('the provider is down')

    const still = await engine.start(waits)
    const timedOut = await cli(['wait', still.runId, '--timeout', '30'])
    expect(timedOut.code).toBe(124)
    expect(timedOut.stderr).toContain('did not finish within 30 ms')
  })
})
