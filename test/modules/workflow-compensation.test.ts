import {
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type RunState,
  TerminalError,
} from 'skein'
import { defineWorkflow, workflow, workflowNodes } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'

// Compensation (docs/workflows.md, "Compensation"): a node declares how to undo its effect;
// when the workflow fails, the finished nodes are undone in reverse dependency order.

const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})

/** The shop: what each effect did, in order, and switches for failures. */
const shop = { log: [] as string[], courierDown: true, refundDown: false }
const reserve = defineEffect({
  execute: async (input: { sku: string }) => {
    shop.log.push(`reserve ${input.sku}`)
    return { holdId: `h-${input.sku}` }
  },
})
const release = defineEffect({
  execute: async (input: { holdId: string }) => {
    shop.log.push(`release ${input.holdId}`)
    return 'released'
  },
})
const charge = defineEffect({
  execute: async (input: { cents: number }) => {
    shop.log.push(`charge ${input.cents}`)
    return { chargeId: `c-${input.cents}` }
  },
})
const refund = defineEffect({
  retry: { maxAttempts: 2, backoffMs: 0 },
  execute: async (input: { chargeId: string }) => {
    shop.log.push(`refund ${input.chargeId}`)
    if (shop.refundDown) throw new TerminalError('the gateway refuses refunds')
    return 'refunded'
  },
})
const book = defineEffect({
  execute: async () => {
    shop.log.push('book')
    if (shop.courierDown) throw new TerminalError('no courier')
    return { booking: 'b1' }
  },
})
const shopModule = defineModule({
  namespace: 'shop',
  effects: { reserve, release, charge, refund, book },
})

const order = defineWorkflow({
  name: 'order',
  nodes: {
    reserve: {
      run: (ctx) => ctx.invoke(reserve, { sku: 'A1' }),
      compensate: (ctx) => ctx.invoke(release, { holdId: ctx.result.holdId }),
    },
    charge: {
      after: ['reserve'],
      run: (ctx) => ctx.invoke(charge, { cents: 500 }),
      compensate: (ctx) => ctx.invoke(refund, { chargeId: ctx.result.chargeId }),
    },
    note: { after: ['reserve'], run: () => 'noted' },
    book: { after: ['charge', 'note'], run: (ctx) => ctx.invoke(book, null) },
  },
})
const valueWithUndo = defineWorkflow({
  name: 'value-with-undo',
  nodes: {
    plain: {
      run: () => 42,
      compensate: (ctx) => ctx.invoke(release, { holdId: 'x' }),
    },
  },
})

function open() {
  const engine = createEngine({
    modules: [workflow({ definitions: [order, valueWithUndo] }), shopModule],
  })
  engines.push(engine)
  return engine
}

const typesOf = async (engine: Engine, runId: string) =>
  (await engine.getEvents(runId)).map((e) => e.type)

async function settle(engine: Engine, runId: string): Promise<RunState> {
  await (await engine.ready()).runtime.idle()
  return engine.getRun(runId)
}

describe('compensation', () => {
  it('undoes the finished nodes in reverse dependency order, then fails with the cause', async () => {
    shop.log.length = 0
    shop.courierDown = true
    shop.refundDown = false
    const engine = open()
    const { runId } = await engine.start(order, undefined, { wait: 'settled' })
    const run = await settle(engine, runId)
    expect(shop.log).toEqual(['reserve A1', 'charge 500', 'book', 'refund c-500', 'release h-A1'])
    expect(run.status).toBe('failed')
    expect(run.error?.code).toBe('NODE_FAILED')
    expect((run.error as any).details.compensated).toEqual(['charge', 'reserve'])
    const types = await typesOf(engine, runId)
    expect(types.filter((t) => t === 'workflow.compensation.started')).toHaveLength(1)
    expect(types.filter((t) => t === 'workflow.node.compensated')).toHaveLength(2)
    const nodes = (await engine.project(runId, workflowNodes)).threads[run.rootThreadId]
    expect(nodes.reserve.status).toBe('compensated')
    expect(nodes.charge.status).toBe('compensated')
    expect(nodes.note.status).toBe('done')
    expect(nodes.book.status).toBe('failed')
  })

  it('a compensation that fails for good leaves COMPENSATION_FAILED; an operator retry goes on', async () => {
    shop.log.length = 0
    shop.courierDown = true
    shop.refundDown = true
    const engine = open()
    const { runId } = await engine.start(order, undefined, { wait: 'settled' })
    let run = await settle(engine, runId)
    expect(run.status).toBe('failed')
    expect(run.error).toMatchObject({
      code: 'COMPENSATION_FAILED',
      details: { nodeId: 'charge', failure: { code: 'NODE_FAILED' } },
    })
    expect(run.error?.message).toContain('retryEffect')
    // The refund ran under its own retry policy once (terminal), and nothing after it.
    expect(shop.log).toEqual(['reserve A1', 'charge 500', 'book', 'refund c-500'])
    const nodes = (await engine.project(runId, workflowNodes)).threads[run.rootThreadId]
    expect(nodes.charge.status).toBe('compensation_failed')

    shop.refundDown = false
    const failed = (await engine.inspectRun(runId)).effects.find((e) => e.type === 'shop.refund')
    expect(failed?.status).toBe('failed')
    await engine.retryEffect(runId, failed!.effectId)
    run = await settle(engine, runId)
    expect(shop.log.slice(4)).toEqual(['refund c-500', 'release h-A1'])
    expect(run.status).toBe('failed')
    expect(run.error?.code).toBe('NODE_FAILED')
    expect((run.error as any).details.compensated).toEqual(['charge', 'reserve'])
  })

  it('compensate on a node that returned no effect fails it with INVALID_COMPENSATION', async () => {
    const engine = open()
    const { runId } = await engine.start(valueWithUndo, undefined, { wait: 'settled' })
    const run = await settle(engine, runId)
    expect(run.status).toBe('failed')
    const error = (run.error as any).details.error
    expect(error.code).toBe('INVALID_COMPENSATION')
    expect(error.message).toContain('node plain')
    expect(error.message).toContain('returned a value')
    expect(() =>
      defineWorkflow({
        name: 'bad',
        nodes: { a: { run: () => 1, compensate: 'refund' as any } },
      }),
    ).toThrow(/compensate must be a function/)
  })

  it('a workflow that succeeds compensates nothing', async () => {
    shop.log.length = 0
    shop.courierDown = false
    const engine = open()
    const { state } = await engine.start(order, undefined, { wait: 'settled' })
    expect(state.status).toBe('completed')
    expect(shop.log).toEqual(['reserve A1', 'charge 500', 'book'])
  })
})
