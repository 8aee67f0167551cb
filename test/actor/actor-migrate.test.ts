// A run migrated on an actor host (docs/deploys.md, "Migrating runs"): the host's run registry
// follows the run's version, so run summaries filtered by version find it under the new one.
// On each shipped registry: memory, SQLite (cells over a directory), Postgres (shared cells).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventStore } from 'skein'
import {
  type ActorHost,
  createActorHost,
  memoryRegistry,
  postgresRegistry,
  type RunRegistry,
  sharedCells,
  sqliteRegistry,
} from 'skein/actor'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { freshPostgresStore, postgresAvailable, testSchemas } from '../support/postgres.js'
import { freshDir } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-actor-migrate-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const hosts: ActorHost[] = []
const stores: EventStore[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.stop()
  for (const store of stores.splice(0)) await store.close?.()
})

const order = (version: string) =>
  defineWorkflow({
    name: 'order',
    version,
    nodes: { paid: { run: (ctx) => ctx.waitFor('order.paid') } },
  })

type Setup = { registry: RunRegistry } & Parameters<typeof createActorHost>[0]
const setups: Array<{ name: string; setup: () => Setup }> = [
  { name: 'memory', setup: () => ({ registry: memoryRegistry() }) },
  {
    name: 'SQLite',
    setup: () => {
      const at = freshDir(dir)
      return { dir: join(at, 'cells'), registry: sqliteRegistry({ path: join(at, 'registry.db') }) }
    },
  },
]
if (postgresAvailable('actor-migrate')) {
  const schemas = testSchemas('actor_migrate')
  setups.push({
    name: 'Postgres',
    setup: () => {
      const store = freshPostgresStore(schemas)
      stores.push(store)
      return { cells: sharedCells({ store }), registry: postgresRegistry({ store }) }
    },
  })
}

describe.each(setups)('an actor host migrates a run ($name registry)', ({ setup }) => {
  it('the registry and the summaries show the run’s version after the move', async () => {
    const options = setup()
    const host = createActorHost({
      modules: [workflow({ definitions: [order('v1'), order('v2')] })],
      authorize: () => true,
      ...options,
    })
    hosts.push(host)
    const call = async (path: string, body?: unknown) => {
      const init: RequestInit =
        body === undefined
          ? {}
          : {
              method: 'POST',
              body: JSON.stringify(body),
              headers: { 'content-type': 'application/json' },
            }
      const res = await host.fetch(new Request(`http://actor.test${path}`, init))
      if (!res) throw new Error(`${path}: not answered`)
      return { status: res.status, body: (await res.json()) as any }
    }
    for (const runId of ['m-1', 'm-2']) {
      const started = await call('/runs', {
        kind: 'workflow',
        definitionName: 'order',
        definitionVersion: 'v1',
        runId,
      })
      expect(started.status, JSON.stringify(started.body)).toBe(200)
    }
    const dry = await call('/runs/m-1/migrate', { toVersion: 'v2', dryRun: true })
    expect(dry.status, JSON.stringify(dry.body)).toBe(200)
    const v1Before = await options.registry.list()
    expect(v1Before.runs.map((r) => r.definitionVersion)).toEqual(['v1', 'v1'])

    const moved = await call('/runs/m-1/migrate', { toVersion: 'v2' })
    expect(moved.body.migration).toMatchObject({ migrated: true, toVersion: 'v2' })
    const listed = await options.registry.list()
    expect(listed.runs.map((r) => [r.runId, r.definitionVersion])).toEqual([
      ['m-1', 'v2'],
      ['m-2', 'v1'],
    ])
    const onV2 = await call('/runs/summaries?definitionVersion=v2')
    expect(onV2.body.runs.map((r: { runId: string }) => r.runId)).toEqual(['m-1'])
    const onV1 = await call('/runs/summaries?definitionVersion=v1')
    expect(onV1.body.runs.map((r: { runId: string }) => r.runId)).toEqual(['m-2'])
    expect((await call('/runs/m-1')).body.state.definitionVersion).toBe('v2')
  })
})
