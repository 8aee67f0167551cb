// Cancellation over HTTP is opt-in: without `http.cancelRoutes` the routes answer 503
// NOT_CONFIGURED and cancel nothing; with it, POST /runs/:id/cancel and
// POST /operations/runs/cancel (operations access) cancel one run, one thread or a filter's
// runs, through the client and `skein cancel`; `skein fork` forks over the same server.
import { createEngine, type Engine, type ServerHandle } from 'skein'
import { type ClientError, createEngineClient } from 'skein/client'
import { debuggerUi } from 'skein/debugger'
import { workflow } from 'skein/workflow'
import { afterEach, expect, it } from 'vitest'
import { type CliIo, runCli } from '../../src/cli/index.js'
import { breaks, waits } from './result-workflows.js'

const engines: Engine[] = []
const servers: ServerHandle[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
  for (const engine of engines.splice(0)) await engine.stop()
})

async function host(cancelRoutes?: boolean) {
  const engine = createEngine({
    modules: [workflow({ definitions: [waits, breaks] })],
    http: cancelRoutes === undefined ? {} : { cancelRoutes },
    debugger: { basePath: '/_skein', ui: debuggerUi() },
    authorize: (request, { access }) =>
      access !== 'operations' || request.headers.get('authorization') === 'Bearer ops'
        ? true
        : Response.json({ error: { code: 'FORBIDDEN', message: 'ops only' } }, { status: 403 }),
  })
  engines.push(engine)
  const server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
  servers.push(server)
  const ops = createEngineClient({ baseUrl: server.url, headers: { authorization: 'Bearer ops' } })
  const capabilities = async () =>
    (await fetch(new URL('/_skein/capabilities.json', server.url))).json()
  return { engine, server, ops, capabilities }
}

async function cli(args: string[], url: string) {
  let stdout = ''
  let stderr = ''
  const io: CliIo = {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: { SKEIN_URL: url, SKEIN_TOKEN: 'ops' },
  }
  const code = await runCli(args, io)
  return { code, stdout, stderr }
}

it('is off by default: 503 NOT_CONFIGURED, nothing cancelled, no Cancel in the debugger', async () => {
  const { engine, server, ops, capabilities } = await host()
  const { runId } = await engine.start(waits)
  const tail = (await engine.getEvents(runId)).length
  const one = (await ops.cancel(runId).catch((e) => e)) as ClientError
  expect([one.status, one.code]).toEqual([503, 'NOT_CONFIGURED'])
  expect(one.message).toContain('cancelRoutes')
  const many = (await ops.cancelMany({ status: 'running' }).catch((e) => e)) as ClientError
  expect([many.status, many.code]).toEqual([503, 'NOT_CONFIGURED'])
  const byCli = await cli(['cancel', runId], server.url)
  expect(byCli.code).toBe(1)
  expect(byCli.stderr).toContain('NOT_CONFIGURED')
  expect((await engine.getEvents(runId)).length).toBe(tail)
  expect(await capabilities()).toEqual({ cancel: false, operations: true })
  expect(() => createEngine({ http: { cancelRoutes: 'yes' as never } })).toThrow(/cancelRoutes/)
})

it('with http.cancelRoutes: one run, a thread, a filter, under operations access', async () => {
  const { engine, server, ops, capabilities } = await host(true)
  expect(await capabilities()).toEqual({ cancel: true, operations: true })
  const reader = createEngineClient({ baseUrl: server.url })
  const first = await engine.start(waits)
  const denied = (await reader.cancel(first.runId).catch((e) => e)) as ClientError
  expect(denied.status).toBe(403)
  const ghost = (await ops
    .cancel(first.runId, { threadId: 'ghost' })
    .catch((e) => e)) as ClientError
  expect([ghost.status, ghost.code]).toEqual([400, 'INVALID_INPUT'])
  expect((await engine.getRun(first.runId)).status).toBe('running')

  const cancelled = await ops.cancel(first.runId)
  expect(cancelled.state.status).toBe('cancelled')
  // A finished run: a no-op, as the embed method.
  expect((await ops.cancel(first.runId)).state.status).toBe('cancelled')

  const second = await engine.start(waits)
  const third = await engine.start(waits)
  const dry = await ops.cancelMany({ definitionName: 'waits', status: 'running' }, { dryRun: true })
  expect(dry).toMatchObject({ action: 'cancel', dryRun: true, matched: 2, done: [] })
  const empty = (await ops.cancelMany({}).catch((e) => e)) as ClientError
  expect([empty.status, empty.code]).toEqual([400, 'INVALID_REQUEST'])
  expect((await engine.getRun(second.runId)).status).toBe('running')

  const byCli = await cli(['cancel', second.runId], server.url)
  expect(byCli.code, byCli.stderr).toBe(0)
  expect(byCli.stdout).toContain(`cancelled ${second.runId}`)
  const bulk = await cli(
    ['cancel', '--filter', '{"definitionName":"waits","status":"running"}', '--json'],
    server.url,
  )
  expect(bulk.code, bulk.stderr).toBe(0)
  expect(JSON.parse(bulk.stdout)).toMatchObject({ matched: 1, done: [{ runId: third.runId }] })
  expect((await engine.getRun(third.runId)).status).toBe('cancelled')
  expect((await cli(['cancel'], server.url)).code).toBe(2)
})

it('skein fork: a failed run forked at its failed node over HTTP', async () => {
  const { engine, server, ops } = await host()
  const { runId } = await engine.start(breaks)
  await engine.signal(runId, [{ type: 'app.go', payload: {} }])
  expect((await engine.getRun(runId)).status).toBe('failed')
  const before = JSON.stringify(await engine.getEvents(runId))
  const reader = createEngineClient({ baseUrl: server.url })
  const denied = (await reader.fork(runId, { atNode: 'boom' }).catch((e) => e)) as ClientError
  expect(denied.status).toBe(403)
  const bad = (await ops.fork(runId, { atNode: 'nope' }).catch((e) => e)) as ClientError
  expect([bad.status, bad.code]).toEqual([400, 'INVALID_REQUEST'])

  const out = await cli(
    ['fork', runId, '--at-node', 'boom', '--run-id', 'again', '--json'],
    server.url,
  )
  expect(out.code, out.stderr).toBe(0)
  const forked = JSON.parse(out.stdout)
  expect(forked).toMatchObject({ runId: 'again', forkedFrom: { runId } })
  // The node still throws (no fix deployed): the fork fails at it again, on its own log.
  expect((await engine.getRun('again')).status).toBe('failed')
  expect(JSON.stringify(await engine.getEvents(runId))).toBe(before)
  expect((await cli(['fork', runId], server.url)).code).toBe(2)
})
