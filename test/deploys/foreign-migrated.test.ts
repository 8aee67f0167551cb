// A migrated run on a host that registers neither of its versions (docs/deploys.md, "Migrating
// runs" and "Any host accepts, a host with the version executes"): reads, summaries and a
// deferred signal's reply show the version the run moved to, and a host with it finishes it.
import { createEngine, type Engine, type EngineOptions } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('deploy-foreign-migrated').filter((k) => k.name !== 'memory')

const order = (version: string) =>
  defineWorkflow({
    name: 'order',
    version,
    nodes: {
      paid: { run: (ctx) => ctx.waitFor('order.paid') },
      done: { after: ['paid'], run: () => ({ version }) },
    },
  })

const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})

function host(store: EngineOptions['store'], versions: string[], owner: string) {
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: versions.map(order) })],
    ownership: { owner, pollMs: 10 },
  })
  engines.push(engine)
  return engine
}

describe.each(kinds)('a migrated run on a host without its versions on $name', (kind) => {
  it('answers with the version the run moved to', async () => {
    const storage = kind.fresh()
    const capable = host(storage.open(), ['v1', 'v2'], 'capable')
    const other = host(storage.open(), ['v3'], 'other')
    await capable.startRun({
      kind: 'workflow',
      definitionName: 'order',
      definitionVersion: 'v1',
      runId: 'moved',
    })
    await capable.migrateRun('moved', { toVersion: 'v2' })

    expect(await other.getRun('moved')).toMatchObject({ definitionVersion: 'v2', executing: false })
    const page = await other.listRunSummaries({ definitionVersion: 'v2' })
    expect(page.runs.map((r) => r.runId)).toEqual(['moved'])
    const reply = await other.signal('moved', [{ type: 'order.paid', payload: {} }])
    expect(reply).toMatchObject({ definitionVersion: 'v2', executing: false })
    expect(reply.reason).toMatch(/workflow:order@v2/)
    expect(await other.result('moved')).toEqual({ paid: {}, done: { version: 'v2' } })
  })
})
