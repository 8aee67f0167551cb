// The drift report (docs/deploys.md): runs not yet finished per definition version on the
// whole store, beside what each host registers, on every store a rolling deploy shares.
import { createEngine, type Engine } from 'skein'
import { createEngineClient } from 'skein/client'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('deploy-versions')

const orderV1 = defineWorkflow({
  name: 'order',
  version: 'v1',
  nodes: { paid: { run: (ctx) => ctx.waitFor('shop.paid') } },
})
const orderV2 = defineWorkflow({
  name: 'order',
  version: 'v2',
  nodes: {
    paid: { run: (ctx) => ctx.waitFor('shop.paid') },
    shipped: { after: ['paid'], run: () => 'shipped' },
  },
})

const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})

function warnings() {
  const lines: string[] = []
  const logger = {
    debug() {},
    info() {},
    warn: (_fields: unknown, message?: string) => {
      lines.push(message ?? '')
    },
    error() {},
  }
  return { lines, logger }
}

describe.each(kinds)('the drift report on $name', (kind) => {
  it('counts runs per version, names what this host lacks, and says which versions may go', async () => {
    const storage = kind.fresh()
    const both = createEngine({
      store: storage.open(),
      modules: [workflow({ definitions: [orderV1, orderV2] })],
    })
    engines.push(both)
    for (const runId of ['a1', 'a2', 'a3']) await both.start(orderV1, {}, { runId })
    await both.start(orderV2, {}, { runId: 'b1' })
    await both.start(orderV1, {}, { runId: 'done-1' })
    await both.signal('done-1', [{ type: 'shop.paid', payload: {} }])
    expect((await both.getRun('done-1')).status).toBe('completed')

    const report = await both.versions()
    expect(report.unexecutableRuns).toBe(0)
    expect(report.versions).toEqual([
      {
        kind: 'workflow',
        name: 'order',
        version: 'v1',
        activeRuns: 3,
        registered: true,
        isDefault: false,
        fingerprint: expect.stringMatching(/^(match|unrecorded)$/),
        safeToDelete: false,
        live: true,
      },
      {
        kind: 'workflow',
        name: 'order',
        version: 'v2',
        activeRuns: 1,
        registered: true,
        isDefault: true,
        fingerprint: expect.stringMatching(/^(match|unrecorded)$/),
        safeToDelete: false,
        live: true,
      },
    ])

    // A host deployed with v2 only: it says so at boot and in its report.
    const { lines, logger } = warnings()
    const newer = createEngine({
      store: storage.open(),
      modules: [workflow({ definitions: [orderV2] })],
      logger,
    })
    engines.push(newer)
    await newer.ready()
    expect(
      lines.find((l) => l.includes('do not register') || l.includes('does not register')),
    ).toMatch(/3 run\(s\).*workflow:order@v1 \(3\)/)
    const drift = await newer.versions()
    expect(drift.unexecutableRuns).toBe(3)
    expect(drift.versions.find((v) => v.version === 'v1')).toMatchObject({
      activeRuns: 3,
      registered: false,
      safeToDelete: false,
    })

    // The v1 runs finish on the host that has v1: v1 is then safe to remove there.
    for (const runId of ['a1', 'a2', 'a3'])
      await both.signal(runId, [{ type: 'shop.paid', payload: {} }])
    const drained = await both.versions()
    expect(drained.versions.find((v) => v.version === 'v1')).toMatchObject({
      activeRuns: 0,
      safeToDelete: true,
    })
    expect((await newer.versions()).unexecutableRuns).toBe(0)
  })

  it('answers over HTTP: GET /definitions/versions, and GET /definitions with counts per version', async () => {
    const storage = kind.fresh()
    const engine = createEngine({
      store: storage.open(),
      modules: [workflow({ definitions: [orderV1, orderV2] })],
    })
    engines.push(engine)
    await engine.start(orderV1, {}, { runId: 'h1' })
    const versions = await (await engine.fetch(
      new Request('http://x/definitions/versions'),
    ))!.json()
    expect(
      versions.versions.map((v: { version: string; activeRuns: number }) => [
        v.version,
        v.activeRuns,
      ]),
    ).toEqual([
      ['v1', 1],
      ['v2', 0],
    ])
    const listed = await (await engine.fetch(new Request('http://x/definitions')))!.json()
    expect(listed.unregistered).toEqual([])
    expect(listed.definitions[0].versions).toEqual([
      expect.objectContaining({ version: 'v1', activeRuns: 1, safeToDelete: false }),
      expect.objectContaining({ version: 'v2', activeRuns: 0, safeToDelete: false }),
    ])
  })

  it('`skein versions` prints the report from a server over a real socket', async () => {
    const storage = kind.fresh()
    const engine = createEngine({
      store: storage.open(),
      modules: [workflow({ definitions: [orderV2] })],
    })
    engines.push(engine)
    const older = createEngine({
      store: storage.open(),
      modules: [workflow({ definitions: [orderV1] })],
    })
    engines.push(older)
    await older.start(orderV1, {}, { runId: 'old-1' })
    const server = await engine.serve({ port: 0 })
    try {
      let stdout = ''
      const code = await runCli(['versions', '--url', server.url], {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: { write: () => {} },
      })
      expect(code).toBe(0)
      const lines = stdout.trim().split('\n')
      expect(lines[0]).toMatch(
        /^KIND\s+NAME\s+VERSION\s+ACTIVE RUNS\s+HERE\s+FLEET\s+SHAPE\s+SAFE TO REMOVE$/,
      )
      // The older host advertises v1 where hosts share the store with ownership (not memory).
      const fleet = kind.name === 'memory' ? 'STRANDED' : 'live'
      expect(lines[1]).toMatch(
        new RegExp(`^workflow\\s+order\\s+v1\\s+1\\s+missing\\s+${fleet}\\s+-\\s+no$`),
      )
      expect(lines[2]).toMatch(/^workflow\s+order\s+v2\*\s+0\s+registered\s+live\s+-\s+no$/)
      expect(lines[3]).toBe('1 run(s) wait for a host that registers their version')
      const client = createEngineClient({ baseUrl: server.url })
      expect((await client.versions()).unexecutableRuns).toBe(1)
    } finally {
      await server.close()
    }
  })
})
