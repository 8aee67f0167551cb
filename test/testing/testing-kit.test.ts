import { createEngine, defineEffect, defineModule } from 'skein'
import { approval, decision, pendingApprovals } from 'skein/approval'
import { createTestEngine, replaceEffects } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'

// The kit an app's own tests use (docs/testing.md, "Testing your workflows"): fakes for effects
// by object or type, a clock whose advance settles, and a run's outcome awaited.

const real = { calls: 0 }
const charge = defineEffect({
  retry: { maxAttempts: 1 },
  execute: async (input: { cents: number }) => {
    real.calls++
    return { chargeId: `real-${input.cents}` }
  },
})
const notify = defineEffect({ execute: async (_input: { to: string }) => 'sent' })
const payments = defineModule({ namespace: 'pay', effects: { charge, notify } })

const checkout = defineWorkflow({
  name: 'checkout',
  nodes: {
    approve: { run: (ctx) => ctx.gate({ title: 'Charge?' }) },
    cool: { after: ['approve'], run: (ctx) => ctx.sleep(60_000) },
    charge: { after: ['cool'], run: (ctx) => ctx.invoke(charge, { cents: 500 }) },
    notify: { after: ['charge'], run: (ctx) => ctx.invoke('pay.notify', { to: 'a@b.c' }) },
  },
  output: ({ results }) => ({ charged: results.charge.chargeId, notified: results.notify }),
})
const modules = [workflow({ definitions: [checkout] }), approval(), payments]

describe('skein/testing: testing your workflows', () => {
  it('fakes an effect object and a type, approves a gate, advances time, awaits the output', async () => {
    const seen: unknown[] = []
    const { engine, clock } = createTestEngine({
      modules,
      fakes: [
        [charge, async (input: { cents: number }) => ({ chargeId: `fake-${input.cents}` })],
        [
          'pay.notify',
          async (input: { to: string }) => {
            seen.push(input)
            return 'faked'
          },
        ],
      ],
    })
    const { runId } = await engine.start(checkout)
    const [gate] = (await engine.project(runId, pendingApprovals)).items
    await engine.signal(runId, [decision(gate!.approvalId, 'approve')])
    await clock.advance(60_000)
    // advance returned after the effects it released settled: no polling.
    expect((await engine.getRun(runId)).status).toBe('completed')
    expect(await engine.result(runId)).toEqual({ charged: 'fake-500', notified: 'faked' })
    expect(seen).toEqual([{ to: 'a@b.c' }])
    expect(real.calls).toBe(0)
    await engine.stop()
  })

  it('refuses a fake for an effect no module registers, naming it', () => {
    const stray = defineEffect({ execute: async () => 1 })
    expect(() => replaceEffects(modules, [[stray, async () => 2]])).toThrow(
      /no module registers an effect object/,
    )
    expect(() => replaceEffects(modules, [['pay.refund', async () => 2]])).toThrow(
      /no module registers effect type "pay.refund"/,
    )
  })

  it('an unregistered effect object fails its node with a message saying how to register it', async () => {
    const stray = defineEffect({ execute: async () => 1 })
    const lost = defineWorkflow({ name: 'lost', nodes: { a: { run: (ctx) => ctx.invoke(stray) } } })
    const engine = createEngine({ modules: [workflow({ definitions: [lost] })] })
    const { state } = await engine.start(lost, undefined, { wait: 'settled' })
    expect(state.status).toBe('failed')
    expect(state.error?.message).toMatch(
      /not registered by any module: add it to a module's effects/,
    )
    await engine.stop()
  })
})
