// POST /operations/runs/retry and /wake over a real server: operations access, the client's
// retryMany/wakeMany, a dry-run count, an empty filter and a bad body refused with 400.
import { createEngine, type Engine, type ServerHandle } from 'skein'
import { type ClientError, createEngineClient } from 'skein/client'
import { workflow } from 'skein/workflow'
import { afterEach, expect, it } from 'vitest'
import { breaks, waits } from './result-workflows.js'

let engine: Engine
let server: ServerHandle
afterEach(async () => {
  await server?.close()
  await engine?.stop()
})

it('bulk actions over HTTP need operations access and a filter', async () => {
  engine = createEngine({
    modules: [workflow({ definitions: [waits, breaks] })],
    authorize: (request, { access }) =>
      access !== 'operations' || request.headers.get('authorization') === 'Bearer ops'
        ? true
        : Response.json(
            { error: { code: 'FORBIDDEN', message: 'operations only' } },
            { status: 403 },
          ),
  })
  server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
  const ops = createEngineClient({ baseUrl: server.url, headers: { authorization: 'Bearer ops' } })
  const reader = createEngineClient({ baseUrl: server.url })
  const parked = await engine.start(waits)
  const failing = await engine.start(breaks)
  await engine.signal(failing.runId, [{ type: 'app.go' }])

  const denied = (await reader.wakeMany({ definitionName: 'waits' }).catch((e) => e)) as ClientError
  expect(denied.status).toBe(403)
  const dry = await ops.retryMany({ status: 'failed' }, { dryRun: true })
  expect(dry).toEqual({
    action: 'retry',
    dryRun: true,
    matched: 1,
    truncated: false,
    done: [],
    refused: [],
  })
  // The node body is an effect: retried (it fails again, the run with it).
  const retried = await ops.retryMany({ status: 'failed' })
  expect(retried.done).toEqual([{ runId: failing.runId, effectIds: [expect.any(String)] }])
  const again = await ops.retryMany({ runIdPrefix: parked.runId })
  expect(again.refused).toEqual([
    { runId: parked.runId, code: 'NOTHING_TO_RETRY', message: expect.any(String) },
  ])
  const woken = await ops.wakeMany({ definitionName: 'waits' })
  expect(woken.done).toEqual([{ runId: parked.runId }])
  const empty = (await ops.wakeMany({}).catch((e) => e)) as ClientError
  expect([empty.status, empty.code]).toEqual([400, 'INVALID_REQUEST'])
  for (const body of [{}, { filter: 'failed' }, { filter: { status: 'failed' }, dryRun: 'yes' }]) {
    const res = await fetch(`${server.url}/operations/runs/wake`, {
      method: 'POST',
      headers: { authorization: 'Bearer ops', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    expect(res.status).toBe(400)
  }
})
