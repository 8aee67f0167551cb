// Type tests, checked by `npm run typecheck` (not run by vitest): `defineOrderedWorkflow`, the
// nodes as a list, types every upstream result inside `run` and `when` without annotations,
// whatever the upstream `run`s take (docs/workflows.md, "Types"). Every `@ts-expect-error` is a
// case that must not compile; an expectation that stops holding fails the type-check.
import { defineEffect, type Engine, type OutputOf } from 'skein'
import type { ApprovalDecision } from 'skein/approval'
import { defineEvaluator, type Evaluation } from 'skein/evaluator'
import { defineOrderedWorkflow, defineWorkflow } from 'skein/workflow'
import { expectTypeOf } from 'vitest'
import { z } from 'zod'

// The README quickstart as a list: typed in every node, in `when`, and in `output`.
const release = defineOrderedWorkflow({
  name: 'release',
  nodes: [
    { id: 'draft', run: ({ input }) => ({ text: `About ${input.topic}` }) },
    { id: 'review', after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    {
      id: 'publish',
      after: ['review'],
      when: ({ results }) => {
        expectTypeOf(results.review).toEqualTypeOf<ApprovalDecision>()
        // @ts-expect-error a typed result has no such property (in `when`)
        results.review.outcom
        return results.review.outcome === 'approve'
      },
      run: ({ results }) => {
        expectTypeOf(results.draft).toEqualTypeOf<{ text: string }>()
        expectTypeOf(results.review).toEqualTypeOf<ApprovalDecision>()
        // @ts-expect-error a typed result has no such property (in `run`)
        results.draft.nope
        return { published: results.draft.text }
      },
    },
  ],
  output: ({ results }) => {
    // @ts-expect-error a typed result has no such property (in `output`)
    results.draft.nope
    // `publish` has a `when`: it may be absent.
    expectTypeOf(results.publish).toEqualTypeOf<{ published: string } | undefined>()
    return { text: results.draft.text, published: results.publish !== undefined }
  },
})
expectTypeOf<OutputOf<typeof release>>().toEqualTypeOf<{ text: string; published: boolean }>()

// Typos inside returned expressions fail too (TypeScript checks those while inferring).
defineOrderedWorkflow({
  name: 'typo-in-return',
  nodes: [
    { id: 'a', run: (ctx) => ({ n: ctx.attempt }) },
    {
      id: 'b',
      after: ['a'],
      // @ts-expect-error a is { n: number }
      run: ({ results }) => results.a.m,
    },
    {
      id: 'c',
      after: ['a'],
      // @ts-expect-error a is { n: number }
      when: ({ results }) => results.a.m > 1,
      run: () => 1,
    },
  ],
})

// The same workflow as the record form: the same output type without `output`.
const recordForm = defineWorkflow({
  name: 'release',
  nodes: {
    draft: { run: ({ input }) => ({ text: `About ${input.topic}` }) },
    review: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    publish: {
      after: ['review'],
      when: ({ results }) => results.review.outcome === 'approve',
      run: ({ results }) => ({ published: results.draft.text as string }),
    },
  },
})
const listForm = defineOrderedWorkflow({
  name: 'release',
  nodes: [
    { id: 'draft', run: ({ input }) => ({ text: `About ${input.topic}` }) },
    { id: 'review', after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    {
      id: 'publish',
      after: ['review'],
      when: ({ results }) => results.review.outcome === 'approve',
      run: ({ results }) => ({ published: results.draft.text }),
    },
  ],
})
expectTypeOf<OutputOf<typeof listForm>>().toEqualTypeOf<OutputOf<typeof recordForm>>()

// Directive outcomes, schema input, transitive upstream results, fallbacks and skips.
const review = defineEvaluator({
  name: 'review',
  input: z.object({ amount: z.number() }),
  routes: ['auto', 'review'],
  evaluate: ({ amount }) => ({ route: amount > 100 ? 'review' : 'auto' }),
})
const publish = defineEffect({
  execute: async (input: { text: string }) => ({ url: `https://example.com/${input.text}` }),
})
const child = defineOrderedWorkflow({
  name: 'child',
  input: z.object({ n: z.number() }),
  nodes: [{ id: 'double', run: ({ input }) => input.n * 2 }],
  output: ({ results }) => ({ doubled: results.double }),
})
const order = defineOrderedWorkflow({
  name: 'order',
  input: z.object({ sku: z.string(), quantity: z.number() }),
  nodes: [
    {
      id: 'price',
      run: ({ input }) => {
        expectTypeOf(input).toEqualTypeOf<{ sku: string; quantity: number }>()
        return { cents: input.quantity * 250 }
      },
    },
    { id: 'score', after: ['price'], run: (ctx) => ctx.evaluate(review, { amount: 1 }) },
    { id: 'nested', run: (ctx) => ctx.spawn(child, { n: 2 }) },
    { id: 'wait', run: (ctx) => ctx.sleep(10) },
    { id: 'later', run: async (ctx) => ctx.nodeId.length },
    { id: 'cached', run: (ctx) => ({ cached: ctx.attempt > 1 }) },
    { id: 'live', run: (ctx) => ({ fresh: ctx.attempt }), onFailure: { fallback: 'cached' } },
    {
      id: 'post',
      after: ['score', 'nested', 'wait', 'later', 'live'],
      run: (ctx) => {
        expectTypeOf(ctx.results.price).toEqualTypeOf<{ cents: number }>() // transitively
        expectTypeOf(ctx.results.score).toEqualTypeOf<Evaluation<'auto' | 'review'>>()
        expectTypeOf(ctx.results.nested).toEqualTypeOf<{ doubled: number }>()
        expectTypeOf(ctx.results.wait).toEqualTypeOf<{ at: number }>()
        expectTypeOf(ctx.results.later).toEqualTypeOf<number>()
        expectTypeOf(ctx.results.live).toEqualTypeOf<{ fresh: number } | { cached: boolean }>()
        // A node that is not upstream is unknown.
        expectTypeOf(ctx.results.cached).toBeUnknown()
        return ctx.invoke(publish, { text: String(ctx.results.price.cents) })
      },
      onFailure: 'skip',
    },
    {
      id: 'notify',
      after: ['post'],
      run: ({ results }) => {
        expectTypeOf(results.post).toEqualTypeOf<{ url: string }>()
        return null
      },
    },
  ],
  output: ({ results }) => {
    expectTypeOf(results.post).toEqualTypeOf<{ url: string } | undefined>()
    expectTypeOf(results.cached).toEqualTypeOf<{ cached: boolean } | undefined>()
    expectTypeOf(results.notify).toEqualTypeOf<null>()
    return results.price.cents
  },
})
expectTypeOf<OutputOf<typeof order>>().toEqualTypeOf<number>()

export async function starts(engine: Engine): Promise<void> {
  await engine.start(order, { sku: 'a', quantity: 2 })
  // @ts-expect-error the schema types quantity as a number
  await engine.start(order, { sku: 'a', quantity: '2' })
  defineOrderedWorkflow({
    name: 'p',
    // @ts-expect-error the child's schema types n as a number
    nodes: [{ id: 'c', run: (ctx) => ctx.spawn(child, { n: '2' }) }],
  })
}

// The list is in dependency order: `after` and a fallback name only nodes listed before.
defineOrderedWorkflow({
  name: 'unknown-after',
  nodes: [
    { id: 'a', run: () => 1 },
    // @ts-expect-error zz is not a node
    { id: 'b', after: ['a', 'zz'], run: () => 2 },
  ],
})
defineOrderedWorkflow({
  name: 'after-a-later-node',
  nodes: [
    // @ts-expect-error b is listed after a
    { id: 'a', after: ['b'], run: () => 1 },
    { id: 'b', run: () => 2 },
  ],
})
defineOrderedWorkflow({
  name: 'fallback-listed-later',
  nodes: [
    // @ts-expect-error a fallback is listed before the node that names it
    { id: 'a', run: () => 1, onFailure: { fallback: 'b' } },
    { id: 'b', run: () => 2 },
  ],
})

// Up to 32 nodes are typed: the last of a chain of 32 sees the first typed, transitively.
defineOrderedWorkflow({
  name: 'thirty-two',
  nodes: [
    { id: 'n1', run: (ctx) => ({ depth: ctx.attempt }) },
    { id: 'n2', after: ['n1'], run: ({ results }) => ({ depth: results.n1.depth + 1 }) },
    { id: 'n3', after: ['n2'], run: ({ results }) => ({ depth: results.n2.depth + 1 }) },
    { id: 'n4', after: ['n3'], run: ({ results }) => ({ depth: results.n3.depth + 1 }) },
    { id: 'n5', after: ['n4'], run: ({ results }) => ({ depth: results.n4.depth + 1 }) },
    { id: 'n6', after: ['n5'], run: ({ results }) => ({ depth: results.n5.depth + 1 }) },
    { id: 'n7', after: ['n6'], run: ({ results }) => ({ depth: results.n6.depth + 1 }) },
    { id: 'n8', after: ['n7'], run: ({ results }) => ({ depth: results.n7.depth + 1 }) },
    { id: 'n9', after: ['n8'], run: ({ results }) => ({ depth: results.n8.depth + 1 }) },
    { id: 'n10', after: ['n9'], run: ({ results }) => ({ depth: results.n9.depth + 1 }) },
    { id: 'n11', after: ['n10'], run: ({ results }) => ({ depth: results.n10.depth + 1 }) },
    { id: 'n12', after: ['n11'], run: ({ results }) => ({ depth: results.n11.depth + 1 }) },
    { id: 'n13', after: ['n12'], run: ({ results }) => ({ depth: results.n12.depth + 1 }) },
    { id: 'n14', after: ['n13'], run: ({ results }) => ({ depth: results.n13.depth + 1 }) },
    { id: 'n15', after: ['n14'], run: ({ results }) => ({ depth: results.n14.depth + 1 }) },
    { id: 'n16', after: ['n15'], run: ({ results }) => ({ depth: results.n15.depth + 1 }) },
    { id: 'n17', after: ['n16'], run: ({ results }) => ({ depth: results.n16.depth + 1 }) },
    { id: 'n18', after: ['n17'], run: ({ results }) => ({ depth: results.n17.depth + 1 }) },
    { id: 'n19', after: ['n18'], run: ({ results }) => ({ depth: results.n18.depth + 1 }) },
    { id: 'n20', after: ['n19'], run: ({ results }) => ({ depth: results.n19.depth + 1 }) },
    { id: 'n21', after: ['n20'], run: ({ results }) => ({ depth: results.n20.depth + 1 }) },
    { id: 'n22', after: ['n21'], run: ({ results }) => ({ depth: results.n21.depth + 1 }) },
    { id: 'n23', after: ['n22'], run: ({ results }) => ({ depth: results.n22.depth + 1 }) },
    { id: 'n24', after: ['n23'], run: ({ results }) => ({ depth: results.n23.depth + 1 }) },
    { id: 'n25', after: ['n24'], run: ({ results }) => ({ depth: results.n24.depth + 1 }) },
    { id: 'n26', after: ['n25'], run: ({ results }) => ({ depth: results.n25.depth + 1 }) },
    { id: 'n27', after: ['n26'], run: ({ results }) => ({ depth: results.n26.depth + 1 }) },
    { id: 'n28', after: ['n27'], run: ({ results }) => ({ depth: results.n27.depth + 1 }) },
    { id: 'n29', after: ['n28'], run: ({ results }) => ({ depth: results.n28.depth + 1 }) },
    { id: 'n30', after: ['n29'], run: ({ results }) => ({ depth: results.n29.depth + 1 }) },
    { id: 'n31', after: ['n30'], run: ({ results }) => ({ depth: results.n30.depth + 1 }) },
    {
      id: 'n32',
      after: ['n31'],
      run: ({ results }) => {
        expectTypeOf(results.n1).toEqualTypeOf<{ depth: number }>()
        // @ts-expect-error a typed result has no such property
        results.n1.nope
        return { depth: results.n31.depth + 1 }
      },
    },
  ],
})
// A 33rd node does not compile; the error names the limit (the nodes before it stay typed).
defineOrderedWorkflow({
  name: 'thirty-three',
  // @ts-expect-error defineOrderedWorkflow types up to 32 nodes: use defineWorkflow (nodes by id)
  nodes: [
    { id: 'n1', run: (ctx) => ({ depth: ctx.attempt }) },
    { id: 'n2', after: ['n1'], run: ({ results }) => ({ depth: results.n1.depth + 1 }) },
    { id: 'n3', after: ['n2'], run: ({ results }) => ({ depth: results.n2.depth + 1 }) },
    { id: 'n4', after: ['n3'], run: ({ results }) => ({ depth: results.n3.depth + 1 }) },
    { id: 'n5', after: ['n4'], run: ({ results }) => ({ depth: results.n4.depth + 1 }) },
    { id: 'n6', after: ['n5'], run: ({ results }) => ({ depth: results.n5.depth + 1 }) },
    { id: 'n7', after: ['n6'], run: ({ results }) => ({ depth: results.n6.depth + 1 }) },
    { id: 'n8', after: ['n7'], run: ({ results }) => ({ depth: results.n7.depth + 1 }) },
    { id: 'n9', after: ['n8'], run: ({ results }) => ({ depth: results.n8.depth + 1 }) },
    { id: 'n10', after: ['n9'], run: ({ results }) => ({ depth: results.n9.depth + 1 }) },
    { id: 'n11', after: ['n10'], run: ({ results }) => ({ depth: results.n10.depth + 1 }) },
    { id: 'n12', after: ['n11'], run: ({ results }) => ({ depth: results.n11.depth + 1 }) },
    { id: 'n13', after: ['n12'], run: ({ results }) => ({ depth: results.n12.depth + 1 }) },
    { id: 'n14', after: ['n13'], run: ({ results }) => ({ depth: results.n13.depth + 1 }) },
    { id: 'n15', after: ['n14'], run: ({ results }) => ({ depth: results.n14.depth + 1 }) },
    { id: 'n16', after: ['n15'], run: ({ results }) => ({ depth: results.n15.depth + 1 }) },
    { id: 'n17', after: ['n16'], run: ({ results }) => ({ depth: results.n16.depth + 1 }) },
    { id: 'n18', after: ['n17'], run: ({ results }) => ({ depth: results.n17.depth + 1 }) },
    { id: 'n19', after: ['n18'], run: ({ results }) => ({ depth: results.n18.depth + 1 }) },
    { id: 'n20', after: ['n19'], run: ({ results }) => ({ depth: results.n19.depth + 1 }) },
    { id: 'n21', after: ['n20'], run: ({ results }) => ({ depth: results.n20.depth + 1 }) },
    { id: 'n22', after: ['n21'], run: ({ results }) => ({ depth: results.n21.depth + 1 }) },
    { id: 'n23', after: ['n22'], run: ({ results }) => ({ depth: results.n22.depth + 1 }) },
    { id: 'n24', after: ['n23'], run: ({ results }) => ({ depth: results.n23.depth + 1 }) },
    { id: 'n25', after: ['n24'], run: ({ results }) => ({ depth: results.n24.depth + 1 }) },
    { id: 'n26', after: ['n25'], run: ({ results }) => ({ depth: results.n25.depth + 1 }) },
    { id: 'n27', after: ['n26'], run: ({ results }) => ({ depth: results.n26.depth + 1 }) },
    { id: 'n28', after: ['n27'], run: ({ results }) => ({ depth: results.n27.depth + 1 }) },
    { id: 'n29', after: ['n28'], run: ({ results }) => ({ depth: results.n28.depth + 1 }) },
    { id: 'n30', after: ['n29'], run: ({ results }) => ({ depth: results.n29.depth + 1 }) },
    { id: 'n31', after: ['n30'], run: ({ results }) => ({ depth: results.n30.depth + 1 }) },
    { id: 'n32', after: ['n31'], run: ({ results }) => ({ depth: results.n31.depth + 1 }) },
    { id: 'n33', run: () => 33 },
  ],
})

// A `when` that takes no parameter still makes its node optional in `output`.
defineOrderedWorkflow({
  name: 'plain-when',
  nodes: [
    { id: 'a', run: (ctx) => ctx.attempt },
    { id: 'b', after: ['a'], when: () => true, run: ({ results }) => results.a + 1 },
  ],
  output: ({ results }) => {
    expectTypeOf(results.a).toEqualTypeOf<number>()
    expectTypeOf(results.b).toEqualTypeOf<number | undefined>()
    return null
  },
})
