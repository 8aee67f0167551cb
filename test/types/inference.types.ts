// Type tests, checked by `npm run typecheck` (not run by vitest): inferred definition types.
// Every `@ts-expect-error` is a case that must not compile; an expectation that stops holding,
// or an error that goes away, fails the type-check.
import { defineEffect, defineProjection, type Engine, type OutputOf } from 'skein'
import { agent, defineAgent, defineTool } from 'skein/agent'
import { type ApprovalDecision, type ApprovalItem, pendingApprovals } from 'skein/approval'
import { defineEvaluator, type Evaluation } from 'skein/evaluator'
import { defineWorkflow } from 'skein/workflow'
import { expectTypeOf } from 'vitest'
import { z } from 'zod'

const review = defineEvaluator({
  name: 'review',
  input: z.object({ amount: z.number() }),
  routes: ['auto', 'review'],
  evaluate: ({ amount }) => ({ route: amount > 100 ? 'review' : 'auto' }),
})

const publish = defineEffect({
  execute: async (input: { text: string }) => ({ url: `https://example.com/${input.text}` }),
})

const child = defineWorkflow({
  name: 'child',
  input: z.object({ n: z.number() }),
  nodes: { double: { run: ({ input }) => input.n * 2 } },
  output: ({ results }) => ({ doubled: results.double }),
})

const release = defineWorkflow({
  name: 'release',
  input: z.object({ topic: z.string(), urgent: z.boolean().default(false) }),
  nodes: {
    draft: {
      run: ({ input }) => {
        expectTypeOf(input).toEqualTypeOf<{ topic: string; urgent: boolean }>()
        return { text: `About ${input.topic}` }
      },
    },
    stamp: { run: () => ({ at: 1 }) },
    approve: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    score: { after: ['stamp'], run: (ctx) => ctx.evaluate(review, { amount: 5 }) },
    nested: { run: (ctx) => ctx.spawn(child, { n: 2 }) },
    post: {
      after: ['approve', 'score'],
      when: ({ results }) => {
        expectTypeOf(results.stamp).toEqualTypeOf<{ at: number }>()
        return results.approve.outcome === 'approve'
      },
      run: (ctx) => {
        // Upstream nodes whose run takes no parameter are typed inside nodes, transitively.
        expectTypeOf(ctx.results.stamp).toEqualTypeOf<{ at: number }>()
        // @ts-expect-error a typed upstream result has no such property
        ctx.results.stamp.nope
        // Nodes that are not upstream are unknown.
        expectTypeOf(ctx.results.nested).toBeUnknown()
        return ctx.invoke(publish, { text: 'x' })
      },
      onFailure: 'skip',
    },
    quiet: { run: () => {} },
    fallbackOnly: { run: () => 'fallback' },
    risky: { run: () => 7, onFailure: { fallback: 'fallbackOnly' } },
  },
  output: ({ input, results }) => {
    expectTypeOf(input.topic).toBeString()
    // `output` sees every node's result typed, whatever its run takes.
    expectTypeOf(results.draft).toEqualTypeOf<{ text: string }>()
    expectTypeOf(results.approve).toEqualTypeOf<ApprovalDecision>()
    expectTypeOf(results.score).toEqualTypeOf<Evaluation<'auto' | 'review'>>()
    expectTypeOf(results.nested).toEqualTypeOf<{ doubled: number }>()
    // A node with `when` or `onFailure: 'skip'` may be absent; so may a fallback-only node.
    expectTypeOf(results.post).toEqualTypeOf<{ url: string } | undefined>()
    expectTypeOf(results.fallbackOnly).toEqualTypeOf<string | undefined>()
    // A node that returns nothing records null.
    expectTypeOf(results.quiet).toEqualTypeOf<null>()
    // A node with a fallback has its own result or the fallback's.
    expectTypeOf(results.risky).toEqualTypeOf<number | string>()
    // @ts-expect-error a typed result has no such property
    results.draft.nope
    return { published: results.post !== undefined, text: results.draft.text }
  },
})
expectTypeOf<OutputOf<typeof release>>().toEqualTypeOf<{ published: boolean; text: string }>()

defineWorkflow({
  name: 'bad-graph',
  nodes: {
    a: { run: () => 1 },
    // @ts-expect-error `after` names only nodes of the workflow
    b: { after: ['a', 'zz'], run: () => 2 },
  },
})

defineWorkflow({
  name: 'bad-spawn',
  nodes: {
    // @ts-expect-error the child's schema types n as a number
    a: { run: (ctx) => ctx.spawn(child, { n: 'two' }) },
  },
})

const lookup = defineTool({
  name: 'lookup',
  description: 'Find an order',
  input: z.object({ orderId: z.string() }),
  run: async (args) => {
    expectTypeOf(args).toEqualTypeOf<{ orderId: string }>()
    // @ts-expect-error tool arguments are typed by the tool's schema
    args.nope
    return { found: true }
  },
})
const support = defineAgent({
  name: 'support',
  instructions: (input) => `Help ${input.customer}`,
  input: z.object({ customer: z.string() }),
  tools: [lookup, review],
})
agent({ definitions: [support] })

defineEvaluator({
  name: 'strict',
  routes: ['yes', 'no'],
  // @ts-expect-error an evaluator answers with one of its routes
  evaluate: () => ({ route: 'maybe' }),
})

const counter = defineProjection({ initial: { n: 0 }, reduce: (s) => ({ n: s.n + 1 }) })

export async function startsAndProjections(engine: Engine): Promise<void> {
  await engine.start(release, { topic: 'Skein' })
  await engine.start(release, { topic: 'Skein', urgent: true }, { runId: 'r1' })
  // @ts-expect-error the schema types topic as a string
  await engine.start(release, { topic: 1 })
  // @ts-expect-error the input is required by the schema
  await engine.start(release)
  await engine.start(support, { customer: 'Ada' })
  // @ts-expect-error the agent's schema needs customer
  await engine.start(support, { text: 'hi' })
  await engine.start(review, { amount: 3 })
  const untyped = defineWorkflow({ name: 'untyped', nodes: { a: { run: ({ input }) => input } } })
  await engine.start(untyped)
  await engine.start(untyped, { anything: [1, 2] })

  expectTypeOf(await engine.project('r1', pendingApprovals)).toEqualTypeOf<{
    items: ApprovalItem[]
  }>()
  expectTypeOf(await engine.project('r1', counter)).toEqualTypeOf<{ n: number }>()
  expectTypeOf(await engine.project('r1', 'ledger')).toBeAny()
}
