import { createEngine, defineEffect, defineKind, defineModule, defineProjection } from 'skein'
import { approval } from 'skein/approval'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'

const kind = defineKind({ initialState: () => null, decide: () => [] })
const projection = defineProjection({ initial: 0, reduce: (n: number) => n })

describe('module composition', () => {
  it('fails fast on duplicates and missing dependencies, naming the culprit', () => {
    const a = defineModule({ namespace: 'a', effects: { x: defineEffect({ execute: () => 1 }) } })
    const cases: Array<[string, () => unknown, RegExp]> = [
      [
        'namespace',
        () => createEngine({ modules: [a, defineModule({ namespace: 'a' })] }),
        /namespace "a"/,
      ],
      [
        'kind',
        () =>
          createEngine({
            modules: [
              defineModule({ namespace: 'p', kinds: { k: kind } }),
              defineModule({ namespace: 'q', kinds: { k: kind } }),
            ],
          }),
        /kind "k"/,
      ],
      [
        'projection',
        () =>
          createEngine({
            modules: [
              defineModule({ namespace: 'p', projections: { v: projection } }),
              defineModule({ namespace: 'q', projections: { v: projection } }),
            ],
          }),
        /projection "v"/,
      ],
      [
        'dependency',
        () =>
          createEngine({ modules: [defineModule({ namespace: 'p', dependencies: ['approval'] })] }),
        /needs module "approval"/,
      ],
      [
        'definition',
        () => {
          const wf = defineWorkflow({ name: 'w', nodes: { n: { run: () => 1 } } })
          return createEngine({ modules: [workflow({ definitions: [wf, wf] })] })
        },
        /registered twice/,
      ],
      [
        'unknown kind',
        () =>
          createEngine({
            modules: [
              defineModule({
                namespace: 'p',
                definitions: [{ kind: 'nope', name: 'x', version: 'v1' }],
              }),
            ],
          }),
        /kind "nope"/,
      ],
      [
        'runtime namespace',
        () => createEngine({ modules: [defineModule({ namespace: 'runtime' })] }),
        /namespace/,
      ],
    ]
    for (const [name, make, message] of cases) {
      let error: any
      try {
        make()
      } catch (e) {
        error = e
      }
      expect(error?.code, name).toBe('MODULE_COMPOSITION')
      expect(error.message, name).toMatch(message)
    }
    expect(() =>
      createEngine({
        modules: [defineModule({ namespace: 'p', dependencies: ['approval'] }), approval()],
      }),
    ).not.toThrow()
  })

  it('two engines coexist in one process without sharing anything', async () => {
    const wf = defineWorkflow({ name: 'w', nodes: { n: { run: ({ input }) => input } } })
    const one = createEngine({ modules: [workflow({ definitions: [wf] })] })
    const two = createEngine({ modules: [workflow({ definitions: [wf] })] })
    await one.start(wf, 1, { runId: 'same' })
    await two.start(wf, 2, { runId: 'same' })
    expect((await one.getRun('same')).output).toEqual({ n: 1 })
    expect((await two.getRun('same')).output).toEqual({ n: 2 })
    expect(await one.listRuns()).toEqual(['same'])
    await Promise.all([one.stop(), two.stop()])
  })

  it('rejects bad options at createEngine', () => {
    expect(() => createEngine({ maxWakeIterations: 0 })).toThrow(/maxWakeIterations/)
    expect(() => createEngine({ snapshotEvery: -1 })).toThrow(/snapshotEvery/)
    expect(() =>
      createEngine({ debugger: { basePath: '/runs', ui: { fetch: () => new Response() } } }),
    ).toThrow()
  })
})
