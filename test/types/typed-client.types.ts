// Type tests, checked by `npm run typecheck` (not run by vitest): the client typed by the
// server's definitions, `getRun`/`result` typed by a definition, and declared signals
// (docs/http.md, "A typed client"; docs/workflows.md, "Signals"). Every `@ts-expect-error` is a
// case that must not compile.
import { createEngine, type Engine, type Json, type RunState } from 'skein'
import { defineAgent } from 'skein/agent'
import { type ApprovalItem, decision, defineApproval, pendingApprovals } from 'skein/approval'
import { createEngineClient } from 'skein/client'
import { defineEvaluator } from 'skein/evaluator'
import { createTestEngine } from 'skein/testing'
import { defineOrderedWorkflow, defineWorkflow, type NodeView, workflowNodes } from 'skein/workflow'
import { expectTypeOf } from 'vitest'
import { z } from 'zod'

const order = defineWorkflow({
  name: 'order',
  input: z.object({ sku: z.string(), qty: z.number() }),
  signals: { 'order.paid': z.object({ cents: z.number() }) },
  nodes: {
    paid: {
      run: (ctx) => {
        // @ts-expect-error a workflow that declares signals waits only for those
        ctx.waitFor('order.shipped')
        return ctx.waitFor('order.paid')
      },
    },
  },
  output: ({ results }) => {
    expectTypeOf(results.paid).toEqualTypeOf<{ cents: number }>()
    return { total: results.paid.cents }
  },
})
const release = defineOrderedWorkflow({
  name: 'release',
  signals: { 'release.approved': z.object({ by: z.string() }) },
  nodes: [{ id: 'approved', run: (ctx) => ctx.waitFor('release.approved') }],
  output: ({ results }) => results.approved.by,
})
const loose = defineWorkflow({ name: 'loose', nodes: { a: { run: (ctx) => ctx.waitFor('x.y') } } })
expectTypeOf(order.name).toEqualTypeOf<'order'>()
expectTypeOf(release.name).toEqualTypeOf<'release'>()

// Agents, evaluators and approvals declare signals as workflows do.
const support = defineAgent({
  name: 'support',
  instructions: 'Help.',
  signals: { 'support.rated': z.object({ stars: z.number() }) },
})
const triage = defineEvaluator({
  name: 'triage',
  routes: ['a', 'b'],
  evaluate: () => ({ route: 'a' }),
  signals: { 'triage.hint': z.object({ route: z.string() }) },
})
const refund = defineApproval({
  name: 'refund',
  title: () => 'Refund?',
  signals: { 'refund.note': z.object({ text: z.string() }) },
  effects: ['payments.refund'],
})

expectTypeOf(support.name).toEqualTypeOf<'support'>()
expectTypeOf(triage.name).toEqualTypeOf<'triage'>()
expectTypeOf(refund.name).toEqualTypeOf<'refund'>()

const definitions = [order, release, loose] as const
const everyKind = [support, triage, refund] as const

export async function typedClient(): Promise<void> {
  const client = createEngineClient<typeof definitions>({ baseUrl: 'http://127.0.0.1:8787' })

  // start with the object: input and output typed.
  const started = await client.start(order, { sku: 'a', qty: 1 })
  expectTypeOf(started.state.output).toEqualTypeOf<{ total: number } | undefined>()
  // @ts-expect-error the schema types qty as a number
  await client.start(order, { sku: 'a', qty: 'one' })
  // @ts-expect-error the input is required by the schema
  await client.start(order)

  // startRun by name: the name, the kind and the input are checked.
  const byName = await client.startRun({
    kind: 'workflow',
    definitionName: 'order',
    input: { sku: 'a', qty: 2 },
  })
  expectTypeOf(byName.state.output).toEqualTypeOf<{ total: number } | undefined>()
  // @ts-expect-error no definition is named ordr
  await client.startRun({ kind: 'workflow', definitionName: 'ordr', input: {} })
  // @ts-expect-error order's input needs qty
  await client.startRun({ kind: 'workflow', definitionName: 'order', input: { sku: 'a' } })
  // @ts-expect-error order is a workflow
  await client.startRun({ kind: 'agent', definitionName: 'order', input: { sku: 'a', qty: 1 } })

  // getRun and result by name or by object.
  const run = await client.getRun('r1', 'order')
  expectTypeOf(run.state.output).toEqualTypeOf<{ total: number } | undefined>()
  expectTypeOf((await client.getRun('r1', release)).state.output).toEqualTypeOf<
    string | undefined
  >()
  expectTypeOf((await client.getRun('r1')).state).toEqualTypeOf<RunState>()
  expectTypeOf(await client.result('r1', 'order')).toEqualTypeOf<{ total: number }>()
  expectTypeOf(await client.result('r1', 'release', { timeoutMs: 5 })).toEqualTypeOf<string>()
  expectTypeOf(await client.result('r1')).toEqualTypeOf<Json | undefined>()
  // @ts-expect-error no definition is named nope
  await client.getRun('r1', 'nope')
  // @ts-expect-error no definition is named nope
  await client.result('r1', 'nope')

  // Signals: a declared type carries its payload; other types are as before.
  await client.signal('r1', [{ type: 'order.paid', payload: { cents: 5 } }])
  await client.signal('r1', [decision('a1', 'approve'), { type: 'app.note', payload: 'hi' }])
  // @ts-expect-error order.paid's payload is { cents: number }
  await client.signal('r1', [{ type: 'order.paid', payload: { cents: 'five' } }])
  // @ts-expect-error release.approved's payload needs by
  await client.signal('r1', [{ type: 'app.note' }, { type: 'release.approved', payload: {} }])

  // project: told of the projections by name, a known name and its state's type.
  const projections = { pendingApprovals, workflowNodes }
  const viewer = createEngineClient<typeof definitions, typeof projections>({ baseUrl: 'x' })
  const pending = await viewer.project('r1', 'pendingApprovals')
  expectTypeOf(pending.value).toEqualTypeOf<{ items: ApprovalItem[] }>()
  const nodes = (await viewer.project('r1', 'workflowNodes')).value.threads.t1
  expectTypeOf(nodes.n1).toEqualTypeOf<NodeView>()
  // @ts-expect-error no projection is registered as pendingApproval
  await viewer.project('r1', 'pendingApproval')
  // Without them, any name: Json, or the type the caller names.
  expectTypeOf((await client.project('r1', 'anything')).value).toEqualTypeOf<Json>()
  expectTypeOf((await client.project<{ n: number }>('r1', 'counter')).value.n).toBeNumber()

  // stream takes the input as start does: required by order's schema.
  client.stream(order, { sku: 'a', qty: 1 }, {}, { onTransient: () => {} })
  client.stream(loose)
  // @ts-expect-error the input is required by the schema
  client.stream(order)
  // @ts-expect-error the schema types qty as a number
  client.stream(order, { sku: 'a', qty: 'one' })

  // Declared on any kind.
  const kinds = createEngineClient<typeof everyKind>({ baseUrl: 'http://127.0.0.1:8787' })
  await kinds.signal('r1', [{ type: 'support.rated', payload: { stars: 5 } }])
  // @ts-expect-error support.rated's stars is a number
  await kinds.signal('r1', [{ type: 'support.rated', payload: { stars: 'five' } }])
  // @ts-expect-error triage.hint's payload needs route
  await kinds.signal('r1', [{ type: 'triage.hint', payload: {} }])
  // @ts-expect-error refund.note's text is a string
  await kinds.signal('r1', [{ type: 'refund.note', payload: { text: 1 } }])
  // Their names are literal too: startRun and result by name.
  await kinds.startRun({ kind: 'agent', definitionName: 'support', input: 'hi' })
  // @ts-expect-error no definition is named suport
  await kinds.startRun({ kind: 'agent', definitionName: 'suport', input: 'hi' })
  expectTypeOf((await kinds.result('r1', 'triage')).route).toEqualTypeOf<'a' | 'b'>()
  expectTypeOf((await kinds.result('r1', 'support')).text).toBeString()
}

export async function typedEngine(): Promise<void> {
  const engine = createEngine<typeof definitions>({})
  await engine.signal('r1', [{ type: 'order.paid', payload: { cents: 5 } }])
  await engine.signal('r1', [decision('a1', 'approve'), { type: 'app.note', payload: 'hi' }])
  // @ts-expect-error order.paid's payload is { cents: number }
  await engine.signal('r1', [{ type: 'order.paid', payload: { cents: 'five' } }])
  // @ts-expect-error release.approved's payload needs by
  await engine.signal('r1', [{ type: 'release.approved', payload: {} }], { idempotencyKey: 'k' })
  expectTypeOf(await engine.signal('r1', [])).toEqualTypeOf<RunState>()

  const { engine: tested } = createTestEngine<typeof everyKind>()
  await tested.signal('r1', [{ type: 'refund.note', payload: { text: 'ok' } }])
  // @ts-expect-error refund.note's text is a string
  await tested.signal('r1', [{ type: 'refund.note', payload: { text: 1 } }])

  // Without the type argument, any payload compiles (the run's schemas check it).
  const untyped = createEngine()
  await untyped.signal('r1', [{ type: 'order.paid', payload: { cents: 'five' } }])
  const events: { type: string; payload?: Json }[] = []
  await untyped.signal('r1', events)
  const typedAsEngine: Engine = engine
  await typedAsEngine.signal('r1', events)
}

export async function untypedClient(): Promise<void> {
  const client = createEngineClient({ baseUrl: 'http://127.0.0.1:8787' })
  const any = await client.startRun({ kind: 'workflow', definitionName: 'x', input: { a: 1 } })
  expectTypeOf(any.state.output).toEqualTypeOf<Json | undefined>()
  expectTypeOf((await client.getRun('r1', 'x')).state.output).toEqualTypeOf<Json | undefined>()
  await client.signal('r1', [{ type: 'order.paid', payload: { cents: 'five' } }])
}

export async function embedReads(engine: Engine): Promise<void> {
  expectTypeOf((await engine.getRun('r1', order)).output).toEqualTypeOf<
    { total: number } | undefined
  >()
  expectTypeOf((await engine.getRun('r1')).output).toEqualTypeOf<Json | undefined>()
  expectTypeOf(await engine.result('r1', order)).toEqualTypeOf<{ total: number }>()
  const bounded = await engine.result('r1', order, { timeoutMs: 5 })
  expectTypeOf(bounded).toEqualTypeOf<{ total: number }>()
  expectTypeOf(await engine.result('r1')).toEqualTypeOf<Json | undefined>()
  // @ts-expect-error the output has no such field
  ;(await engine.result('r1', order)).cents
}
