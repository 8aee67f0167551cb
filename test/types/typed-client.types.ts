// Type tests, checked by `npm run typecheck` (not run by vitest): the client typed by the
// server's definitions, `getRun`/`result` typed by a definition, and declared signals
// (docs/http.md, "A typed client"; docs/workflows.md, "Signals"). Every `@ts-expect-error` is a
// case that must not compile.
import type { Engine, Json, RunState } from 'skein'
import { decision } from 'skein/approval'
import { createEngineClient } from 'skein/client'
import { defineOrderedWorkflow, defineWorkflow } from 'skein/workflow'
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

const definitions = [order, release, loose] as const

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
