import { defineWorkflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'

// Workflow runs (gates, timers, retries, failure policies, children, waits) are cases of the
// engine contract (src/testing/engine-contract), run on every store by test/contract/.
describe('workflow module', () => {
  it('rejects bad graphs at definition time', () => {
    expect(() =>
      // @ts-expect-error an unknown dependency is a type error too; JavaScript callers get here
      defineWorkflow({ name: 'x', nodes: { a: { after: ['zz'], run: () => 1 } } }),
    ).toThrow(/unknown node "zz"/)
    expect(() =>
      defineWorkflow({
        name: 'x',
        nodes: { a: { after: ['b'], run: () => 1 }, b: { after: ['a'], run: () => 1 } },
      }),
    ).toThrow(/cycle/)
    expect(() =>
      defineWorkflow({ name: 'x', nodes: { a: { run: () => 1 } }, concurrency: 0 }),
    ).toThrow(/concurrency/)
  })
})
