// Migrating runs over a real server (docs/deploys.md, "Migrating runs"): operations access, the
// client's migrateRun/migrateRuns, a refusal's differences in the error body, and `skein migrate`.
import { bearerAuth, createEngine, type Engine, type ServerHandle } from 'skein'
import { type ClientError, createEngineClient } from 'skein/client'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'

const paid = { run: (ctx: any) => ctx.waitFor('shop.paid') }
const v1 = defineWorkflow({ name: 'order', version: 'v1', nodes: { paid } })
const v2 = defineWorkflow({
  name: 'order',
  version: 'v2',
  nodes: { paid, ship: { after: ['paid'], run: () => 'shipped' } },
})
const v3 = defineWorkflow({
  name: 'order',
  version: 'v3',
  nodes: { check: { run: () => 'ok' }, paid: { ...paid, after: ['check'] } },
})

let engine: Engine
let server: ServerHandle
afterEach(async () => {
  await server?.close()
  await engine?.stop()
})

async function cli(args: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await runCli(['--url', server.url, '--token', 'ops', ...args], {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
  })
  return { code, stdout, stderr }
}

it('migrates over HTTP with operations access, and refuses with the differences', async () => {
  engine = createEngine({
    modules: [workflow({ definitions: [v1, v2, v3] })],
    authorize: bearerAuth({ read: 'read', operations: 'ops' }),
  })
  server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
  const ops = createEngineClient({ baseUrl: server.url, headers: { authorization: 'Bearer ops' } })
  const reader = createEngineClient({
    baseUrl: server.url,
    headers: { authorization: 'Bearer read' },
  })
  for (const runId of ['o1', 'o2', 'o3']) await engine.start(v1, {}, { runId })
  const events = await engine.getEvents('o1')

  const denied = (await reader.migrateRun('o1', { toVersion: 'v2' }).catch((e) => e)) as ClientError
  expect(denied.status).toBe(401)
  const dry = await ops.migrateRun('o1', { toVersion: 'v2', dryRun: true })
  expect(dry.migration).toMatchObject({
    runId: 'o1',
    fromVersion: 'v1',
    toVersion: 'v2',
    dryRun: true,
    migrated: false,
  })
  const refused = (await ops.migrateRun('o1', { toVersion: 'v3' }).catch((e) => e)) as ClientError
  expect([refused.status, refused.code]).toEqual([409, 'MIGRATION_REFUSED'])
  expect(refused.details).toMatchObject({
    differences: [{ path: 'nodes.paid.after', current: [], target: ['check'] }],
  })
  const badBody = (await ops
    .migrateRun('o1', { toVersion: 7 as unknown as string })
    .catch((e) => e)) as ClientError
  expect([badBody.status, badBody.code]).toEqual([400, 'INVALID_REQUEST'])
  expect(await engine.getEvents('o1')).toEqual(events)

  const done = await ops.migrateRun('o1', { toVersion: 'v2' })
  expect(done.migration).toMatchObject({ migrated: true, threadIds: [expect.any(String)] })
  const bulk = await ops.migrateRuns({ definitionName: 'order' }, { toVersion: 'v2' })
  expect(bulk).toMatchObject({ action: 'migrate', matched: 3, refused: [] })
  expect(bulk.done.map((d) => [d.runId, d.fromVersion])).toEqual([
    ['o1', 'v2'],
    ['o2', 'v1'],
    ['o3', 'v1'],
  ])
  await engine.signal('o2', [{ type: 'shop.paid', payload: {} }])
  expect(await engine.result('o2')).toMatchObject({ ship: 'shipped' })
})

it('skein migrate moves one run or a definition’s runs, and prints what differs', async () => {
  engine = createEngine({
    modules: [workflow({ definitions: [v1, v2, v3] })],
    authorize: bearerAuth({ operations: 'ops' }),
  })
  server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
  for (const runId of ['c1', 'c2']) await engine.start(v1, {}, { runId })

  const dry = await cli(['migrate', 'c1', '--to', 'v2', '--dry-run'])
  expect(dry).toMatchObject({ code: 0, stdout: 'c1 would move from v1 to v2 (dry run)\n' })
  const refused = await cli(['migrate', '--definition', 'order', '--to', 'v3'])
  expect(refused.code).toBe(1)
  expect(refused.stdout).toMatch(/^RUN\s+FROM\s+RESULT\n/)
  expect(refused.stdout).toMatch(/c1\s+refused: MIGRATION_REFUSED/)
  expect(refused.stdout).toMatch(/nodes\.paid\.after: run \[\], target \["check"\]/)
  expect(refused.stdout).toMatch(/0 migrated, 2 refused of 2 matched/)
  expect(refused.stderr).toBe('skein: 2 of 2 run(s) refused\n')
  const one = await cli(['migrate', 'c1', '--to', 'v3'])
  expect(one.code).toBe(1)
  expect(one.stderr).toMatch(/MIGRATION_REFUSED: .*\(HTTP 409\)\n {2}\S+ nodes\.paid\.after/)
  const moved = await cli(['migrate', '--definition', 'order', '--from', 'v1', '--to', 'v2'])
  expect(moved.code).toBe(0)
  expect(moved.stdout).toMatch(/2 migrated, 0 refused of 2 matched/)
  expect((await engine.getRun('c2')).definitionVersion).toBe('v2')
  const usage = await cli(['migrate', '--to', 'v2'])
  expect(usage).toMatchObject({ code: 2, stderr: expect.stringMatching(/give a run id/) })
})
