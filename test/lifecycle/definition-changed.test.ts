// A definition changed in place under the same version is detected by the fingerprint of its
// shape recorded at start: the run is refused with DEFINITION_CHANGED (409), nothing is
// written, and registering the original beside a new version lets it go on.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, type Engine, type EventEnvelope, memoryStore } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, type WorkflowDefinition, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'

const dir = mkdtempSync(join(tmpdir(), 'skein-defchange-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const engines: Engine[] = []
const stores: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
  await Promise.all(stores.splice(0).map((s) => s.close()))
})

const original = defineWorkflow({
  name: 'order',
  nodes: {
    approve: { run: (ctx) => ctx.waitFor('app.approved') },
    ship: { after: ['approve'], run: () => 'shipped' },
  },
})
// The same name and version, another graph: what an in-place edit and a redeploy look like.
const changedNodes = {
  review: { run: (ctx: any) => ctx.waitFor('app.approved') },
  pack: { run: () => 'packed' },
  ship: { after: ['review', 'pack'] as const, run: () => 'shipped twice as fast' },
}
const changed = defineWorkflow({ name: 'order', nodes: changedNodes })
const v2 = defineWorkflow({ name: 'order', version: 'v2', nodes: changedNodes })
// Only a node body changed: the shape (nodes, dependencies, failure policies) is the same.
const bodyOnly = defineWorkflow({
  name: 'order',
  nodes: {
    approve: { run: (ctx) => ctx.waitFor('app.approved') },
    ship: { after: ['approve'], run: () => 'shipped by the new body' },
  },
})

let n = 0
function engineOn(path: string, definitions: WorkflowDefinition[]) {
  const store = sqliteStore({ path })
  stores.push(store)
  const engine = createEngine({ store, modules: [workflow({ definitions })] })
  engines.push(engine)
  return { engine, store }
}

async function parkedRun() {
  const path = join(dir, `runs-${++n}.db`)
  const first = engineOn(path, [original])
  const { runId } = await first.engine.start(original, undefined, { runId: 'order-1' })
  await first.engine.stop()
  return { path, runId }
}

describe('DEFINITION_CHANGED', () => {
  it('records the fingerprint of the definition in run.started and thread.started', async () => {
    const engine = createEngine({ modules: [workflow({ definitions: [original] })] })
    engines.push(engine)
    const { runId } = await engine.start(original)
    const [started, thread] = await engine.getEvents(runId)
    const fingerprint = (started.payload as any).definitionFingerprint
    expect(fingerprint).toMatch(/^[0-9a-f]{16}$/)
    expect((thread.payload as any).definitionFingerprint).toBe(fingerprint)
    // The fingerprint is of the shape: a new object with the same graph has the same one.
    const again = createEngine({ modules: [workflow({ definitions: [bodyOnly] })] })
    engines.push(again)
    const other = await again.start(bodyOnly)
    expect(((await again.getEvents(other.runId))[0].payload as any).definitionFingerprint).toBe(
      fingerprint,
    )
  })

  it('refuses a signal to a run whose definition changed under the same version, writing nothing', async () => {
    const { path, runId } = await parkedRun()
    const { engine, store } = engineOn(path, [changed])
    const tail = await store.tail(runId)
    const failure = await engine.signal(runId, [{ type: 'app.approved' }]).catch((e) => e)
    expect(failure).toMatchObject({
      code: 'DEFINITION_CHANGED',
      details: { runId, kind: 'workflow', definitionName: 'order', definitionVersion: 'v1' },
    })
    expect(failure.message).toMatch(/^run order-1: thread \S+ was started from workflow:order@v1/)
    expect(failure.message).toMatch(/changed in place under the same version/)
    expect(failure.message).toMatch(/register the changed definition under a new version/)
    expect(await store.tail(runId)).toBe(tail)
    // Reads still work: the run can be inspected.
    expect((await engine.getRun(runId)).status).toBe('running')
    // Over HTTP it is a 409 with the same code.
    const response = await engine.fetch(
      new Request(`http://x/runs/${runId}/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ events: [{ type: 'app.approved' }] }),
      }),
    )
    expect(response?.status).toBe(409)
    expect((await response!.json()).error.code).toBe('DEFINITION_CHANGED')
  })

  it('the fix: the original v1 beside the changed one as v2; runs stay on their version', async () => {
    const { path, runId } = await parkedRun()
    const { engine } = engineOn(path, [original, v2])
    const done = await engine.signal(runId, [{ type: 'app.approved' }])
    expect(done).toMatchObject({ status: 'completed', output: { ship: 'shipped' } })
    const fresh = await engine.startRun({ kind: 'workflow', definitionName: 'order' })
    expect(fresh.state.definitionVersion).toBe('v2')
  })

  it('a change of node bodies only is not a change of shape', async () => {
    const { path, runId } = await parkedRun()
    const { engine } = engineOn(path, [bodyOnly])
    const done = await engine.signal(runId, [{ type: 'app.approved' }])
    expect(done.output).toEqual({ approve: null, ship: 'shipped by the new body' })
  })

  it('a child thread whose definition changed is refused too', async () => {
    const child = (nodes: Record<string, any>) => defineWorkflow({ name: 'child', nodes })
    const childBefore = child({ wait: { run: (ctx: any) => ctx.waitFor('app.approved') } })
    const childAfter = child({
      first: { run: () => 1 },
      wait: { after: ['first'], run: (ctx: any) => ctx.waitFor('app.approved') },
    })
    const parent = defineWorkflow({
      name: 'parent',
      nodes: { kid: { run: (ctx) => ctx.spawn(childBefore) } },
    })
    const store = memoryStore()
    const a = createEngine({ store, modules: [workflow({ definitions: [parent, childBefore] })] })
    engines.push(a)
    const { runId, state } = await a.start(parent)
    const kid = Object.values(state.threads).find((t) => t.definitionName === 'child')!
    const spawned = (await a.getEvents(runId)).find(
      (e) => e.type === 'runtime.thread.started' && (e.payload as any).threadId === kid.threadId,
    )
    expect((spawned!.payload as any).definitionFingerprint).toMatch(/^[0-9a-f]{16}$/)
    await a.stop()
    const b = createEngine({ store, modules: [workflow({ definitions: [parent, childAfter] })] })
    engines.push(b)
    await expect(b.signal(runId, [{ type: 'app.approved' }])).rejects.toMatchObject({
      code: 'DEFINITION_CHANGED',
      details: { threadId: kid.threadId, definitionName: 'child' },
    })
  })

  it('runs recorded before fingerprints existed (no field) keep working', async () => {
    const source = memoryStore()
    const a = createEngine({ store: source, modules: [workflow({ definitions: [original] })] })
    engines.push(a)
    const { runId } = await a.start(original)
    await a.stop()
    const old = (await source.read(runId)).map((e): EventEnvelope => {
      const payload = { ...(e.payload as Record<string, unknown>) }
      delete payload.definitionFingerprint
      return { ...e, payload: payload as EventEnvelope['payload'] }
    })
    const store = memoryStore()
    await store.append(runId, old, { expectedSeq: 0 })
    const b = createEngine({ store, modules: [workflow({ definitions: [original] })] })
    engines.push(b)
    const done = await b.signal(runId, [{ type: 'app.approved' }])
    expect(done).toMatchObject({ status: 'completed', output: { ship: 'shipped' } })
  })
})
