// A mixed fleet on one store (docs/deploys.md): hosts that register different versions of a
// definition, side by side. Each host claims only the due runs of the versions it registers.
import { createEngine, type Engine } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('deploy-mixed-fleet').filter((k) => k.name !== 'memory')

/** nap (a durable timer) → done, which says which version and which host finished the run. */
const order = (version: string, host: string) =>
  defineWorkflow({
    name: 'order',
    version,
    nodes: {
      nap: { run: (ctx) => ctx.sleep(20) },
      ...(version === 'v2' && { audit: { after: ['nap'], run: () => 'audited' } }),
      done: { after: ['nap'], run: () => ({ version, host }) },
    },
  })

const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})

function errorLog() {
  const lines: string[] = []
  const logger = {
    debug() {},
    info() {},
    warn() {},
    error: (_fields: unknown, message?: string) => {
      lines.push(message ?? '')
    },
  }
  return { lines, logger }
}

async function settled(engine: Engine, runId: string) {
  for (;;) {
    const state = await engine.getRun(runId)
    if (state.status !== 'running') return state
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe.each(kinds)('a mixed fleet on $name', (kind) => {
  it('fires each run’s deadlines on the host that registers its version, never the other', async () => {
    const storage = kind.fresh()
    const oldLog = errorLog()
    const newLog = errorLog()
    const oldHost = createEngine({
      store: storage.open(),
      modules: [workflow({ definitions: [order('v1', 'old')] })],
      ownership: { owner: 'old', pollMs: 10 },
      logger: oldLog.logger,
    })
    const newHost = createEngine({
      store: storage.open(),
      modules: [workflow({ definitions: [order('v2', 'new')] })],
      ownership: { owner: 'new', pollMs: 10 },
      logger: newLog.logger,
    })
    engines.push(oldHost, newHost)
    const ids = Array.from({ length: 6 }, (_, i) => i)
    // Both hosts claim due runs at once; the timers fall due while both poll.
    await Promise.all(
      ids.flatMap((i) => [
        oldHost.startRun({ kind: 'workflow', definitionName: 'order', runId: `v1-${i}` }),
        newHost.startRun({ kind: 'workflow', definitionName: 'order', runId: `v2-${i}` }),
      ]),
    )
    for (const i of ids) {
      const v1 = await settled(oldHost, `v1-${i}`)
      const v2 = await settled(newHost, `v2-${i}`)
      expect([v1.status, v2.status]).toEqual(['completed', 'completed'])
      expect(v1.output).toMatchObject({ done: { version: 'v1', host: 'old' } })
      expect(v2.output).toMatchObject({ done: { version: 'v2', host: 'new' } })
    }
    // Neither host tried a run it cannot fold (that fails its wake and logs an error).
    expect([...oldLog.lines, ...newLog.lines]).toEqual([])
  })

  it('accepts a signal on a host without the run’s version; a host with it executes the run', async () => {
    const storage = kind.fresh()
    const gated = (version: string, host: string) =>
      defineWorkflow({
        name: 'order',
        version,
        nodes: {
          paid: { run: (ctx) => ctx.waitFor('shop.paid') },
          done: { after: ['paid'], run: () => ({ version, host }) },
        },
      })
    const oldHost = createEngine({
      store: storage.open(),
      modules: [workflow({ definitions: [gated('v1', 'old')] })],
      ownership: { owner: 'old', pollMs: 10 },
    })
    const newHost = createEngine({
      store: storage.open(),
      modules: [workflow({ definitions: [gated('v2', 'new')] })],
      ownership: { owner: 'new', pollMs: 10 },
    })
    engines.push(oldHost, newHost)
    await oldHost.startRun({ kind: 'workflow', definitionName: 'order', runId: 'o1' })
    await oldHost.startRun({ kind: 'workflow', definitionName: 'order', runId: 'o2' })

    const paid = [{ type: 'shop.paid', payload: { by: 'new host' } }]
    const reply = await newHost.signal('o1', paid, { idempotencyKey: 'pay-o1' })
    expect(reply).toMatchObject({ runId: 'o1', executing: false, definitionVersion: 'v1' })
    expect((reply as { reason?: string }).reason).toMatch(/workflow:order@v1/)
    // A retry of the same request is recorded once.
    await newHost.signal('o1', paid, { idempotencyKey: 'pay-o1' })
    // Over HTTP the same: 200, the state says the run is executed elsewhere.
    const res = (await newHost.fetch(
      new Request('http://x/runs/o2/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ events: paid }),
      }),
    ))!
    expect(res.status).toBe(200)
    expect((await res.json()).state).toMatchObject({ executing: false })

    for (const runId of ['o1', 'o2']) {
      const state = await settled(oldHost, runId)
      expect(state.status).toBe('completed')
      expect(state.output).toMatchObject({ done: { version: 'v1', host: 'old' } })
    }
    const types = (await oldHost.getEvents('o1')).map((e) => e.type)
    expect(types.filter((t) => t === 'runtime.input.deferred')).toHaveLength(1)
    expect(types.filter((t) => t === 'shop.paid')).toHaveLength(1)
  })
})
