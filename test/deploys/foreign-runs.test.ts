// A host that does not register a run's version, on a store shared with one that does
// (docs/deploys.md, "Any host accepts, a host with the version executes"): reads, operator
// actions and `wait: 'settled'` answer without DETERMINISM_VIOLATION; a run no live host can
// execute is stranded, then resumes when a host with its version starts.
import {
  createEngine,
  defineEffect,
  defineInput,
  defineModule,
  type Engine,
  type EngineOptions,
  TerminalError,
  type WaitUrl,
} from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('deploy-foreign-runs').filter((k) => k.name !== 'memory')

const failing = { now: true }
const shop = defineModule({
  namespace: 'shop',
  effects: {
    charge: defineEffect({
      execute: () => {
        if (failing.now) throw new TerminalError('gateway down')
        return { charged: true }
      },
    }),
  },
})

/** paid (a signal) → charge (an effect) → done, which names the version that finished it. */
const order = (version: string) =>
  defineWorkflow({
    name: 'order',
    version,
    effects: ['shop.charge'],
    nodes: {
      paid: { run: (ctx) => ctx.waitFor('order.paid') },
      charge: { after: ['paid'], run: (ctx) => ctx.invoke('shop.charge', {}) },
      done: { after: ['charge'], run: () => ({ version }) },
    },
  })

const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
  failing.now = true
})

function host(
  store: EngineOptions['store'],
  versions: string[],
  ownership: { owner: string; leaseMs?: number },
) {
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: versions.map(order) }), shop],
    ownership: { pollMs: 10, ...ownership },
  })
  engines.push(engine)
  return engine
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; ; i++) {
    const value = await read()
    if (done(value) || i > 1000) return value
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

const paid = [{ type: 'order.paid', payload: {} }]

describe.each(kinds)('a host without the run’s version on $name', (kind) => {
  it('reads the run and takes every call for it; the host with the version executes them', async () => {
    const storage = kind.fresh()
    const oldHost = host(storage.open(), ['v1'], { owner: 'old' })
    const newHost = host(storage.open(), ['v2'], { owner: 'new' })
    for (const runId of ['read', 'cancel', 'wake', 'settle', 'retry'])
      await oldHost.startRun({ kind: 'workflow', definitionName: 'order', runId })
    await oldHost.signal('retry', paid) // its charge fails finally: the run fails
    expect((await oldHost.getRun('retry')).status).toBe('failed')

    // Reads: the state, and that another host executes the run.
    const read = await newHost.getRun('read')
    expect(read).toMatchObject({ status: 'running', definitionVersion: 'v1', executing: false })
    expect(read.reason).toMatch(/workflow:order@v1/)
    expect(read.stranded).toBeUndefined()
    const page = await newHost.listRunSummaries({ definitionVersion: 'v1' })
    expect(page.runs.map((r) => r.runId).sort()).toEqual(
      ['cancel', 'read', 'retry', 'settle', 'wake'].sort(),
    )
    expect(page.runs.some((r) => r.stranded)).toBe(false)
    expect((await newHost.inspectRun('read')).waits).toHaveLength(1)

    // Operator actions: checked here, recorded, executed by the host with v1.
    await expect(newHost.cancel('cancel', 'no-such-thread')).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    })
    expect(await newHost.cancel('cancel')).toMatchObject({ executing: false })
    expect(await newHost.wake('wake')).toMatchObject({ executing: false })
    const effect = (await newHost.inspectRun('retry')).effects.find((e) => e.status === 'failed')!
    failing.now = false
    expect(await newHost.retryEffect('retry', effect.effectId)).toMatchObject({
      executing: false,
    })
    // `wait: 'settled'` waits for the host with v1 to apply the signal and settle the run.
    const settled = await newHost.signal('settle', paid, { wait: 'settled' })
    expect(settled).toMatchObject({ status: 'completed', executing: false })

    expect(
      (
        await until(
          () => oldHost.getRun('cancel'),
          (s) => s.status !== 'running',
        )
      ).status,
    ).toBe('cancelled')
    const retried = await until(
      () => oldHost.getRun('retry'),
      (s) => s.status !== 'failed',
    )
    expect(retried).toMatchObject({ status: 'completed', output: { done: { version: 'v1' } } })
    expect(await newHost.result('settle')).toMatchObject({ done: { version: 'v1' } })
  })

  it('completes a wait URL posted to the host without the version through the host with it', async () => {
    const storage = kind.fresh()
    const sent = new Map<string, WaitUrl>()
    const mail = defineModule({
      namespace: 'mail',
      events: { answered: defineInput(z.object({ approved: z.boolean() })) },
      effects: {
        send: defineEffect({
          execute: (input: { waitUrl: WaitUrl }, ctx) => {
            sent.set(ctx.runId, input.waitUrl)
            return {}
          },
        }),
      },
    })
    const expense = (version: string) =>
      defineWorkflow({
        name: 'expense',
        version,
        nodes: {
          ask: {
            run: (ctx) =>
              ctx.waitForUrl({
                send: 'mail.send',
                input: {},
                event: 'mail.answered',
                expiresInMs: 60_000,
              }),
          },
          done: { after: ['ask'], run: ({ results }) => ({ version, ...results.ask }) },
        },
      })
    const v1 = expense('v1')
    const ownership = { pollMs: 10 }
    const oldHost = createEngine({
      store: storage.open(),
      modules: [mail, workflow({ definitions: [v1] })],
      ownership: { ...ownership, owner: 'old' },
    })
    const newHost = createEngine({
      store: storage.open(),
      modules: [mail, workflow({ definitions: [expense('v2')] })],
      ownership: { ...ownership, owner: 'new' },
    })
    engines.push(oldHost, newHost)
    await oldHost.start(v1, undefined, { runId: 'exp', wait: 'settled' })
    const res = (await newHost.fetch(
      new Request(`http://x${sent.get('exp')!.url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ approved: true }),
      }),
    ))!
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ completed: true, executing: false })
    const done = await until(
      () => oldHost.getRun('exp'),
      (s) => s.status === 'completed',
    )
    expect(done.output).toMatchObject({ done: { version: 'v1', approved: true } })
  })

  it('shows a run no live host registers as stranded; it resumes when a host with it starts', async () => {
    const storage = kind.fresh()
    const short = { leaseMs: 300 }
    const oldHost = host(storage.open(), ['v1'], { owner: 'old', ...short })
    const newHost = host(storage.open(), ['v2'], { owner: 'new', ...short })
    await oldHost.startRun({ kind: 'workflow', definitionName: 'order', runId: 'stuck' })
    failing.now = false
    await oldHost.stop()

    // Once the old host's advertisement lapsed: stranded, not failed, everywhere it is shown.
    const state = await until(
      () => newHost.getRun('stuck'),
      (s) => s.stranded === true,
    )
    expect(state).toMatchObject({ status: 'running', stranded: true, executing: false })
    expect(state.reason).toMatch(/no live host registers workflow:order@v1/)
    const [summary] = (await newHost.listRunSummaries({ definitionVersion: 'v1' })).runs
    expect(summary).toMatchObject({ runId: 'stuck', stranded: true })
    const report = await newHost.versions()
    expect(report.strandedRuns).toBe(1)
    expect(report.versions.find((v) => v.version === 'v1')).toMatchObject({
      live: false,
      activeRuns: 1,
    })
    // Input is still taken (and says the run is stranded).
    expect(await newHost.signal('stuck', paid)).toMatchObject({ executing: false, stranded: true })

    const revived = host(storage.open(), ['v1'], { owner: 'revived', ...short })
    const done = await until(
      () => revived.getRun('stuck'),
      (s) => s.status === 'completed',
    )
    expect(done.output).toMatchObject({ done: { version: 'v1' } })
    expect((await newHost.versions()).strandedRuns).toBe(0)
  })
})
