// Type tests, checked by `npm run typecheck` (not run by vitest): what a node sees of the results
// of the nodes it runs after when their `run` takes a context parameter (docs/workflows.md,
// "Types"). Every `@ts-expect-error` is a case that must not compile. Typos sit in returned
// expressions on purpose: TypeScript checks those while it is still inferring the sibling nodes.
import type { OutputOf } from 'skein'
import type { ApprovalDecision } from 'skein/approval'
import { defineWorkflow } from 'skein/workflow'
import { expectTypeOf } from 'vitest'
import { z } from 'zod'

// The README quickstart as written compiles. TypeScript 6 checks `publish` before it has
// inferred what `draft` and `review` return (their `run`s take a parameter), so in there those
// results are `any`. If this stops holding, inference got better: update docs/workflows.md.
const quickstart = defineWorkflow({
  name: 'release',
  nodes: {
    draft: { run: ({ input }) => ({ text: `About ${input.topic}` }) },
    review: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    publish: {
      after: ['review'],
      when: ({ results }) => results.review.outcome === 'approve',
      run: ({ results }) => {
        expectTypeOf(results.draft).toBeAny()
        return { published: results.draft.text }
      },
    },
  },
})
// After every node is checked, the results are typed: the definition's output is.
expectTypeOf<OutputOf<typeof quickstart>['draft']>().toEqualTypeOf<{ text: string }>()
expectTypeOf<OutputOf<typeof quickstart>['review']>().toEqualTypeOf<ApprovalDecision>()

// The same workflow with the results it reads declared in `types`: typed inside the nodes.
const declared = defineWorkflow({
  name: 'release',
  types: {} as { results: { draft: { text: string }; review: ApprovalDecision } },
  nodes: {
    draft: { run: ({ input }) => ({ text: `About ${input.topic}` }) },
    review: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    publish: {
      after: ['review'],
      when: ({ results }) =>
        results.review.outcome === 'approve' &&
        // @ts-expect-error a declared result has no such property
        results.review.outcom === 'approve',
      run: ({ results }) => ({
        published: results.draft.text,
        // @ts-expect-error a declared result has no such property
        typo: results.draft.nope,
      }),
    },
  },
})
expectTypeOf<OutputOf<typeof declared>['review']>().toEqualTypeOf<ApprovalDecision>()
expectTypeOf<OutputOf<typeof declared>['publish']>().toEqualTypeOf<
  { published: string; typo: any } | undefined
>()

// A chain with every `run` taking its context: each node sees the declared results upstream,
// transitively, and a result it does not run after stays unknown.
const chain = defineWorkflow({
  name: 'chain',
  input: z.object({ n: z.number() }),
  types: {} as { results: { a: { n: number }; b: { label: string } } },
  nodes: {
    a: { run: ({ input }) => ({ n: input.n + 1 }) },
    b: {
      after: ['a'],
      run: ({ results }) => ({
        label: results.a.n.toFixed(),
        // @ts-expect-error a is declared { n: number }
        typo: results.a.m,
      }),
    },
    c: {
      after: ['b'],
      run: (ctx) => {
        expectTypeOf(ctx.results.a).toEqualTypeOf<{ n: number }>()
        expectTypeOf(ctx.results.d).toBeUnknown()
        return `${ctx.results.b.label}:${ctx.results.a.n}`
      },
    },
    d: { run: (ctx) => ctx.nodeId },
  },
  output: ({ results }) => {
    expectTypeOf(results.b).toEqualTypeOf<{ label: string }>()
    expectTypeOf(results.c).toEqualTypeOf<string>()
    return results.c
  },
})
expectTypeOf<OutputOf<typeof chain>>().toEqualTypeOf<string>()

// A declared node returns its declared type: a value (sync or async), or a directive whose
// outcome is that type.
defineWorkflow({
  name: 'declared-returns',
  types: {} as { results: { value: number; later: number; timer: { at: number } } },
  nodes: {
    value: { run: ({ input }) => Number(input) },
    later: { run: async ({ input }) => Number(input) },
    timer: { run: (ctx) => ctx.sleep(5) },
  },
})
defineWorkflow({
  name: 'wrong-value',
  types: {} as { results: { a: { text: string } } },
  nodes: {
    // @ts-expect-error a is declared { text: string }
    a: { run: ({ input }) => ({ txt: String(input) }) },
    b: { after: ['a'], run: ({ results }) => results.a.text },
  },
})
defineWorkflow({
  name: 'wrong-directive',
  types: {} as { results: { a: { at: string } } },
  nodes: {
    // @ts-expect-error a sleep's outcome is { at: number }
    a: { run: (ctx) => ctx.sleep(5) },
    b: { after: ['a'], run: ({ results }) => results.a.at },
  },
})

// Only nodes of the workflow can be declared, whether or not TypeScript knew the node ids
// before checking the `run`s (no node here has an `after`).
defineWorkflow({
  name: 'unknown-id',
  // @ts-expect-error zz is not a node
  types: {} as { results: { a: number; zz: number } },
  nodes: {
    a: { run: ({ input }) => Number(input) },
    b: { after: ['a'], run: ({ results }) => results.a },
  },
})
defineWorkflow({
  name: 'unknown-id-no-after',
  // @ts-expect-error zz is not a node
  types: {} as { results: { zz: number } },
  nodes: { a: { run: ({ input }) => Number(input) } },
})

// A declared fallback stands in with its declared type; undeclared nodes are inferred as before.
const fallback = defineWorkflow({
  name: 'fallback',
  types: {} as { results: { backup: { cached: boolean } } },
  nodes: {
    backup: { run: (ctx) => ({ cached: ctx.attempt > 1 }) },
    live: { run: () => ({ fresh: 1 }), onFailure: { fallback: 'backup' } },
    use: {
      after: ['live'],
      run: ({ results }) => {
        expectTypeOf(results.live).toEqualTypeOf<{ fresh: number } | { cached: boolean }>()
        return 'ok'
      },
    },
  },
})
expectTypeOf<OutputOf<typeof fallback>['backup']>().toEqualTypeOf<{ cached: boolean } | undefined>()
