// Migrating runs between versions (docs/deploys.md, "Migrating runs") on every store: parked v1
// runs moved to a compatible v2 finish on v2 on a host that registers v2 only; an incompatible
// target is refused with the differences and nothing written; replay of a migrated run
// reproduces its state.
import { createEngine, type Engine, MigrationRefusedError, type SkeinError } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('deploy-migrate')

const paid = { run: (ctx: any) => ctx.waitFor('shop.paid') }
const v1 = defineWorkflow({
  name: 'order',
  version: 'v1',
  attributes: { customer: 'string' },
  nodes: { reserve: { run: () => 'reserved' }, paid: { after: ['reserve'], run: paid.run } },
})
// Compatible: the started and finished nodes as they were, a node added after them.
const v2 = defineWorkflow({
  name: 'order',
  version: 'v2',
  attributes: { customer: 'string' },
  nodes: {
    reserve: { run: () => 'reserved' },
    paid: { after: ['reserve'], run: paid.run },
    ship: { after: ['paid'], run: () => 'shipped on v2' },
  },
})
// Incompatible: `reserve` (finished) is gone, `paid` (started) runs after a new node, and the
// attribute the runs carry is not declared.
const v3 = defineWorkflow({
  name: 'order',
  version: 'v3',
  nodes: { check: { run: () => 'ok' }, paid: { after: ['check'], run: paid.run } },
})

const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})

const host = (
  store: ReturnType<ReturnType<(typeof kinds)[number]['fresh']>['open']>,
  defs: any[],
) => {
  const engine = createEngine({ store, modules: [workflow({ definitions: defs })] })
  engines.push(engine)
  return engine
}

describe.each(kinds)('migrating runs on $name', (kind) => {
  it('moves 20 parked v1 runs to v2, where a v2-only host finishes them', {
    timeout: 60_000,
  }, async () => {
    const storage = kind.fresh()
    const both = host(storage.open(), [v1, v2, v3])
    const runIds = Array.from({ length: 20 }, (_, i) => `order-${i}`)
    for (const runId of runIds) await both.start(v1, {}, { runId, attributes: { customer: 'c' } })
    const tails = async () =>
      Promise.all(runIds.map(async (id) => (await both.getEvents(id)).length))
    const before = await tails()

    const dry = await both.migrateRuns(
      { definitionName: 'order', definitionVersion: 'v1' },
      { toVersion: 'v2', dryRun: true },
    )
    expect(dry).toMatchObject({ action: 'migrate', dryRun: true, matched: 20, refused: [] })
    expect(dry.done.map((d) => d.fromVersion)).toEqual(runIds.map(() => 'v1'))
    expect(await tails()).toEqual(before)

    const moved = await both.migrateRuns(
      { definitionName: 'order', definitionVersion: 'v1' },
      { toVersion: 'v2', batchSize: 5 },
    )
    expect(moved).toMatchObject({ matched: 20, refused: [] })
    expect(moved.done).toHaveLength(20)
    const page = await both.listRunSummaries({ definitionName: 'order', limit: 100 })
    expect(new Set(page.runs.map((r) => r.definitionVersion))).toEqual(new Set(['v2']))
    const drift = await both.versions()
    expect(drift.versions.find((v) => v.version === 'v1')).toMatchObject({ activeRuns: 0 })
    // The shape check reads the fingerprint the migration recorded, not the start's.
    expect(drift.versions.find((v) => v.version === 'v2')).toMatchObject({
      activeRuns: 20,
      fingerprint: 'match',
    })
    // Again: each run is on v2 already, nothing written.
    const again = await both.migrateRun('order-0', { toVersion: 'v2' })
    expect(again).toMatchObject({ fromVersion: 'v2', toVersion: 'v2', migrated: false })
    await both.stop()

    // The host restarted with v2 only finishes them on v2.
    const v2Only = host(storage.open(), [v2])
    for (const runId of runIds) await v2Only.signal(runId, [{ type: 'shop.paid', payload: {} }])
    for (const runId of runIds) {
      expect(await v2Only.result(runId, { timeoutMs: 20_000 })).toMatchObject({
        ship: 'shipped on v2',
      })
    }
    const migrated = (await v2Only.getEvents('order-3')).find(
      (e) => e.type === 'runtime.run.migrated',
    )
    expect(migrated).toMatchObject({
      origin: 'operator',
      payload: { fromVersion: 'v1', toVersion: 'v2', threadIds: [expect.any(String)] },
    })
  })

  it('refuses an incompatible target with the differences, writing nothing', async () => {
    const storage = kind.fresh()
    const engine = host(storage.open(), [v1, v2, v3])
    await engine.start(v1, {}, { runId: 'o1', attributes: { customer: 'c' } })
    await engine.start(v1, {}, { runId: 'o2', attributes: { customer: 'c' } })
    const events = await engine.getEvents('o1')

    const refused = (await engine
      .migrateRun('o1', { toVersion: 'v3' })
      .catch((e) => e)) as SkeinError
    expect(MigrationRefusedError.is(refused)).toBe(true)
    expect(refused.message).toMatch(/run o1 cannot move from workflow:order@v1 to v3/)
    const differences = (refused.details as { differences: unknown[] }).differences
    expect(differences).toEqual([
      expect.objectContaining({ path: 'attributes.customer', current: 'c', target: null }),
      expect.objectContaining({
        path: 'nodes.reserve',
        target: null,
        threadId: expect.any(String),
      }),
      expect.objectContaining({
        path: 'nodes.paid.after',
        current: ['reserve'],
        target: ['check'],
      }),
    ])
    // A dry run says the same; the bulk action lists each run refused with its differences.
    await expect(engine.migrateRun('o1', { toVersion: 'v3', dryRun: true })).rejects.toMatchObject({
      code: 'MIGRATION_REFUSED',
    })
    const bulk = await engine.migrateRuns({ definitionName: 'order' }, { toVersion: 'v3' })
    expect(bulk).toMatchObject({ matched: 2, done: [] })
    expect(bulk.refused.map((r) => [r.runId, r.code, r.differences?.length])).toEqual([
      ['o1', 'MIGRATION_REFUSED', 3],
      ['o2', 'MIGRATION_REFUSED', 3],
    ])
    expect(await engine.getEvents('o1')).toEqual(events)
    expect((await engine.getRun('o1')).definitionVersion).toBe('v1')

    // Bad requests: nothing written either.
    await expect(engine.migrateRun('o1', { toVersion: 'v9' })).rejects.toMatchObject({
      code: 'DEFINITION_NOT_FOUND',
    })
    await expect(engine.migrateRun('o1', { toVersion: '' })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
    })
    await expect(engine.migrateRun('nope', { toVersion: 'v2' })).rejects.toMatchObject({
      code: 'RUN_NOT_FOUND',
    })
    await expect(
      engine.migrateRuns({ status: 'running' }, { toVersion: 'v2' }),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
    await engine.signal('o2', [{ type: 'shop.paid', payload: {} }])
    await expect(engine.migrateRun('o2', { toVersion: 'v2' })).rejects.toMatchObject({
      code: 'MIGRATION_REFUSED',
      message: expect.stringMatching(/is completed/),
    })
    expect(await engine.getEvents('o1')).toEqual(events)
  })

  it('replays a migrated run to the state it has, before and after the move', async () => {
    const storage = kind.fresh()
    const engine = host(storage.open(), [v1, v2])
    await engine.start(v1, {}, { runId: 'r1' })
    const beforeMove = (await engine.getEvents('r1')).length
    await engine.migrateRun('r1', { toVersion: 'v2' })
    await engine.signal('r1', [{ type: 'shop.paid', payload: {} }])
    const state = await engine.getRun('r1')
    expect(state).toMatchObject({ status: 'completed', definitionVersion: 'v2' })

    // A fresh host folds the log from the store: the same state.
    const fresh = host(storage.open(), [v1, v2])
    expect(await fresh.getRun('r1')).toEqual(state)
    const tail = (await fresh.getEvents('r1')).length
    const last = await fresh.replayTo('r1', tail)
    expect(last?.after).toEqual(state)
    const step = await fresh.replayTo('r1', beforeMove + 1)
    expect(step?.event.type).toBe('runtime.run.migrated')
    expect(step?.before.definitionVersion).toBe('v1')
    expect(Object.values(step?.before.threads ?? {}).map((t) => t.definitionVersion)).toEqual([
      'v1',
    ])
    expect(step?.after.definitionVersion).toBe('v2')
    expect(Object.values(step?.after.threads ?? {}).map((t) => t.definitionVersion)).toEqual(['v2'])
  })
})
