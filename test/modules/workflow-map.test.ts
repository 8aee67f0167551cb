import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type ErrorInfo,
  type OutputOf,
  TerminalError,
} from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { manualClock } from 'skein/testing'
import { defineWorkflow, type WorkflowDefinition, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { freshPath } from '../support/temp-dirs.js'

// Dynamic fan-out (docs/workflows.md, "Fan-out"): `ctx.map(items, step, options)` runs one
// effect or child per item of a list known at run time, as one node.

const dir = mkdtempSync(join(tmpdir(), 'skein-map-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})

/** Items a test makes fail (by sku), and the calls seen. */
const shop = { failing: new Set<string>(), calls: [] as string[], running: 0, peak: 0 }
const reserve = defineEffect({
  execute: async (input: { sku: string; qty: number }) => {
    shop.calls.push(input.sku)
    shop.running++
    shop.peak = Math.max(shop.peak, shop.running)
    await new Promise((r) => setImmediate(r))
    shop.running--
    if (shop.failing.has(input.sku)) throw new TerminalError(`no stock of ${input.sku}`)
    return { sku: input.sku, reserved: input.qty }
  },
})
const stock = defineModule({ namespace: 'stock', effects: { reserve } })

const line = defineWorkflow({
  name: 'line',
  nodes: { price: { run: ({ input }) => ({ sku: input.sku, cents: input.qty * 100 }) } },
  output: ({ results }) => results.price,
})

type Line = { sku: string; qty: number }
const lines = (n: number): Line[] => Array.from({ length: n }, (_, i) => ({ sku: `s${i}`, qty: i }))

const order = (policy: 'fail' | 'collect' | 'skip', concurrency = 4) =>
  defineWorkflow({
    name: `order-${policy}-${concurrency}`,
    nodes: {
      lines: { run: ({ input }) => input.lines as Line[] },
      reserve: {
        after: ['lines'],
        run: (ctx) =>
          ctx.map(ctx.results.lines as Line[], (l) => ctx.invoke(reserve, l), {
            concurrency,
            onItemFailure: policy,
          }),
        onFailure: 'fail',
      },
    },
    output: ({ results }) => results.reserve,
  })

const fail = order('fail')
const collect = order('collect')
const skip = order('skip')
const wide = order('fail', 50)
const children = defineWorkflow({
  name: 'children',
  nodes: {
    priced: {
      run: (ctx) =>
        ctx.map(ctx.input.lines as Line[], (l) => ctx.spawn(line, l), { concurrency: 3 }),
    },
  },
  output: ({ results }) => results.priced,
})
const bad = (items: unknown, step?: unknown, options?: unknown) =>
  defineWorkflow({
    name: `bad-${Math.random().toString(36).slice(2)}`,
    nodes: {
      m: {
        run: (ctx) =>
          (ctx.map as any)(items, step ?? ((x: any) => ctx.invoke(reserve, x)), options),
      },
    },
  })

function open(defs: WorkflowDefinition[], path?: string) {
  const engine = createEngine({
    modules: [workflow({ definitions: defs }), stock],
    clock: manualClock(),
    ...(path ? { store: sqliteStore({ path }) } : {}),
  })
  engines.push(engine)
  return engine
}

const typesOf = async (engine: Engine, runId: string) =>
  (await engine.getEvents(runId)).map((e) => e.type)

describe('ctx.map', () => {
  it('runs one effect per item, results in input order, at most `concurrency` at once', async () => {
    shop.failing.clear()
    shop.peak = 0
    const engine = open([fail])
    const { runId } = await engine.start(fail, { lines: lines(20) }, { wait: 'settled' })
    const run = await engine.getRun(runId)
    expect(run.status).toBe('completed')
    expect(run.output).toEqual(lines(20).map((l) => ({ sku: l.sku, reserved: l.qty })))
    expect(shop.peak).toBeLessThanOrEqual(4)
    const types = await typesOf(engine, runId)
    expect(types.filter((t) => t === 'runtime.effect.completed')).toHaveLength(20)
    // One node: started once (with its items), finished once.
    const started = (await engine.getEvents(runId)).filter(
      (e) => e.type === 'workflow.node.started',
    )
    expect(started.map((e) => (e.payload as any).nodeId)).toEqual(['lines', 'reserve'])
    expect((started[1].payload as any).directive.items).toHaveLength(20)
  })

  it('spawns a child per item; an empty list finishes at once', async () => {
    const engine = open([children, line])
    const { state } = await engine.start(children, { lines: lines(7) }, { wait: 'settled' })
    expect(state.output).toEqual(lines(7).map((l) => ({ sku: l.sku, cents: l.qty * 100 })))
    const empty = await engine.start(children, { lines: [] }, { wait: 'settled' })
    expect(empty.state.output).toEqual([])
  })

  it("'fail' fails the node at the first failed item and cancels the items still running", async () => {
    shop.failing = new Set(['s3'])
    const engine = open([wide])
    const { runId } = await engine.start(wide, { lines: lines(200) }, { wait: 'settled' })
    const run = await engine.getRun(runId)
    expect(run.status).toBe('failed')
    expect(run.error?.code).toBe('NODE_FAILED')
    expect((run.error as any).details.error).toMatchObject({
      code: 'ITEM_FAILED',
      details: { index: 3, error: { message: 'no stock of s3' } },
    })
    // Items after the first 50 never started.
    const requested = (await typesOf(engine, runId)).filter((t) => t === 'runtime.effect.requested')
    expect(requested.length).toBeLessThan(200)
    shop.failing.clear()
  })

  it("'collect' runs every item and reports each outcome; 'skip' leaves failed items out", async () => {
    shop.failing = new Set(['s1', 's4'])
    const engine = open([collect, skip])
    const collected = await engine.start(collect, { lines: lines(6) }, { wait: 'settled' })
    const out = collected.state.output as any[]
    expect(out.map((o) => o.ok)).toEqual([true, false, true, true, false, true])
    expect(out[1].error.message).toBe('no stock of s1')
    expect(out[2]).toEqual({ ok: true, value: { sku: 's2', reserved: 2 } })
    const skipped = await engine.start(skip, { lines: lines(6) }, { wait: 'settled' })
    expect((skipped.state.output as any[]).map((o) => o.sku)).toEqual(['s0', 's2', 's3', 's5'])
    shop.failing.clear()
  })

  it('bad input fails the node with INVALID_FAN_OUT, never retried, and starts no item', async () => {
    const cases: Array<[ReturnType<typeof bad>, RegExp]> = [
      [bad({ a: 1 }), /needs an array of items, got object/],
      [bad(new Array(5001).fill(0)), /at most 5000 items, got 5001/],
      [
        bad([1], (x: number) => x * 2),
        /must return ctx.invoke\(…\) or ctx.spawn\(…\).*item 0 gave 2/,
      ],
      [bad([1], undefined, { concurrency: 0 }), /concurrency must be an integer/],
      [bad([1], undefined, { onItemFailure: 'ignore' }), /onItemFailure must be/],
    ]
    const engine = open(cases.map(([d]) => d))
    for (const [definition, message] of cases) {
      const { runId, state } = await engine.start(definition, undefined, { wait: 'settled' })
      expect(state.status).toBe('failed')
      const error = (state.error as any).details.error
      expect(error.code).toBe('INVALID_FAN_OUT')
      expect(error.message).toMatch(message)
      expect(error.message).toContain('node m')
      const types = await typesOf(engine, runId)
      expect(types.filter((t) => t === 'runtime.effect.requested')).toEqual([])
    }
  })

  it('is durable: a restart mid fan-out goes on from the recorded items, each item once', async () => {
    shop.failing.clear()
    shop.calls.length = 0
    const path = freshPath(dir, 'restart.db')
    const first = open([fail], path)
    const { runId } = await first.start(fail, { lines: lines(12) })
    expect((await first.getRun(runId)).status).toBe('running')
    await first.stop()
    engines.splice(engines.indexOf(first), 1)
    const second = open([fail], path)
    const { runtime } = await second.ready()
    await second.wake(runId)
    await runtime.idle()
    const run = await second.getRun(runId)
    expect(run.status).toBe('completed')
    expect((run.output as any[]).map((o) => o.sku)).toEqual(lines(12).map((l) => l.sku))
    const completed = (await second.getEvents(runId)).filter(
      (e) => e.type === 'runtime.effect.completed',
    )
    expect(completed).toHaveLength(12)
  })

  it('types: the result is the items’ results (each outcome under collect)', () => {
    const typed = defineWorkflow({
      name: 'typed-map',
      nodes: {
        all: { run: (ctx) => ctx.map([{ sku: 'a', qty: 1 }], (l) => ctx.invoke(reserve, l)) },
        each: {
          run: (ctx) =>
            ctx.map([{ sku: 'a', qty: 1 }], (l) => ctx.invoke(reserve, l), {
              onItemFailure: 'collect',
            }),
        },
      },
      output: ({ results }) => ({ all: results.all, each: results.each }),
    })
    type Reserved = { sku: string; reserved: number }
    expectTypeOf<OutputOf<typeof typed>>().toEqualTypeOf<{
      all: Reserved[]
      each: ({ ok: true; value: Reserved } | { ok: false; error: ErrorInfo })[]
    }>()
  })
})
