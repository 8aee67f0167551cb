// What makes a migration safe (docs/deploys.md, "Migrating runs"), rule by rule: a workflow's
// failed node keeps its policy and its fallback, nodes not reached may change, a custom kind's
// own check or else its shape, a queued run, and a keyed start retried after the move.
import {
  commands,
  createEngine,
  defineKind,
  defineModule,
  type Engine,
  type EngineOptions,
  type SkeinError,
} from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'

const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})
const engineOf = (modules: NonNullable<EngineOptions['modules']>) => {
  const engine = createEngine({ modules })
  engines.push(engine)
  return engine
}
const refusal = async (engine: Engine, runId: string, toVersion: string) => {
  const error = (await engine.migrateRun(runId, { toVersion }).catch((e) => e)) as SkeinError
  expect(error.code).toBe('MIGRATION_REFUSED')
  return (error.details as { differences: Array<{ path: string; threadId?: string }> }).differences
}

const wait = { run: (ctx: any) => ctx.waitFor('app.go') }
const boom = () => {
  throw new Error('boom')
}

describe('the workflow rule', () => {
  it('keeps a failed node’s policy and its fallback; a recorded skip and nodes not reached may change', async () => {
    const skipV1 = defineWorkflow({
      name: 'skip',
      version: 'v1',
      nodes: {
        bad: { run: boom, onFailure: 'skip' },
        wait,
        later: { after: ['wait'], run: () => 1 },
      },
    })
    // `bad` failed and was skipped: the skip is recorded, so v2's policy does not matter.
    const skipV2 = defineWorkflow({
      name: 'skip',
      version: 'v2',
      nodes: { bad: { run: boom, onFailure: 'fail' }, wait },
    })
    // `later` (not reached) removed, `audit` added: safe.
    const skipV3 = defineWorkflow({
      name: 'skip',
      version: 'v3',
      nodes: {
        bad: { run: boom, onFailure: 'skip' },
        wait,
        audit: { after: ['wait'], run: () => 'audited' },
      },
    })
    const fallV1 = defineWorkflow({
      name: 'fall',
      version: 'v1',
      nodes: {
        bad: { run: boom, onFailure: { fallback: 'rescue' } },
        rescue: { run: () => 'r' },
        wait,
      },
    })
    const fallV2 = defineWorkflow({
      name: 'fall',
      version: 'v2',
      nodes: { bad: { run: boom, onFailure: 'skip' }, wait },
    })
    const engine = engineOf([workflow({ definitions: [skipV1, skipV2, skipV3, fallV1, fallV2] })])
    await engine.start(skipV1, {}, { runId: 's1' })
    await engine.start(fallV1, {}, { runId: 'f1' })

    expect(await engine.migrateRun('s1', { toVersion: 'v2', dryRun: true })).toMatchObject({
      fromVersion: 'v1',
    })
    // `bad` failed over to `rescue`: v2 handles its failure otherwise and has no `rescue`.
    expect(await refusal(engine, 'f1', 'v2')).toEqual([
      expect.objectContaining({ path: 'nodes.bad.onFailure', current: { fallback: 'rescue' } }),
      expect.objectContaining({ path: 'nodes.rescue', target: null }),
    ])
    await engine.migrateRun('s1', { toVersion: 'v3' })
    await engine.signal('s1', [{ type: 'app.go' }])
    expect(await engine.result('s1')).toMatchObject({ audit: 'audited' })
  })

  it('migrates a queued run, which starts under the new version when admitted', async () => {
    const nodes = { wait }
    const v1 = defineWorkflow({
      name: 'one-at-a-time',
      version: 'v1',
      flow: { concurrency: { limit: 1 } },
      nodes,
    })
    const v2 = defineWorkflow({
      name: 'one-at-a-time',
      version: 'v2',
      flow: { concurrency: { limit: 1 } },
      nodes: { ...nodes, done: { after: ['wait'], run: () => 'v2' } },
    })
    const engine = engineOf([workflow({ definitions: [v1, v2] })])
    await engine.start(v1, {}, { runId: 'first' })
    const queued = await engine.start(v1, {}, { runId: 'second' })
    expect(queued.state.status).toBe('queued')
    expect(await engine.migrateRun('second', { toVersion: 'v2' })).toMatchObject({
      migrated: true,
      threadIds: [],
    })
    await engine.signal('first', [{ type: 'app.go' }])
    await engine.result('first')
    for (;;) {
      if ((await engine.getRun('second')).status === 'running') break
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    await engine.signal('second', [{ type: 'app.go' }])
    expect(await engine.result('second')).toMatchObject({ done: 'v2' })
  })

  it('recognises a keyed start retried after the run moved', async () => {
    const v1 = defineWorkflow({ name: 'keyed', version: 'v1', nodes: { wait } })
    const v2 = defineWorkflow({
      name: 'keyed',
      version: 'v2',
      nodes: { wait, more: { after: ['wait'], run: () => 2 } },
    })
    const engine = engineOf([workflow({ definitions: [v1, v2] })])
    const first = await engine.start(v1, {}, { idempotencyKey: 'order-9' })
    await engine.migrateRun(first.runId, { toVersion: 'v2' })
    const retried = await engine.start(v1, {}, { idempotencyKey: 'order-9' })
    expect(retried.runId).toBe(first.runId)
    expect(retried.state.definitionVersion).toBe('v2')
  })
})

describe('custom kinds', () => {
  /** Waits for `app.go`, then completes; `check` is its migration check, when given. */
  const probeModule = (
    shapes: Record<string, unknown>,
    check?: (state: null, from: { version: string }, to: { version: string }) => any[],
  ) =>
    defineModule({
      namespace: 'probe',
      kinds: {
        probe: defineKind<null>({
          initialState: () => null,
          decide: (_s, ctx) => {
            const go = ctx.outcome('go')
            if (go.status === 'completed') return [commands.complete(ctx.definition.version)]
            return [commands.wait({ event: { type: 'app.go' } }, { key: 'go' })]
          },
          ...(check && { migrationDifferences: check }),
        }),
      },
      definitions: Object.entries(shapes).map(([version, shape]) => ({
        kind: 'probe',
        name: 'p',
        version,
        ...(shape === undefined ? {} : { shape: shape as never }),
      })),
    })

  it('without a check: moves between equal shapes, refuses different ones', async () => {
    const engine = engineOf([probeModule({ v1: { a: 1 }, v2: { a: 1 }, v3: { a: 2 } })])
    const start = { kind: 'probe', definitionName: 'p', definitionVersion: 'v1' }
    await engine.startRun({ ...start, runId: 'p1' })
    expect(await refusal(engine, 'p1', 'v3')).toEqual([
      expect.objectContaining({ path: 'shape', current: { a: 1 }, target: { a: 2 } }),
    ])
    await engine.migrateRun('p1', { toVersion: 'v2' })
    await engine.signal('p1', [{ type: 'app.go' }])
    expect(await engine.result('p1')).toBe('v2')
  })

  it('with a check: its differences, with the thread named', async () => {
    const engine = engineOf([
      probeModule({ v1: undefined, v2: undefined }, (_s, from, to) => [
        { path: 'mode', current: from.version, target: to.version, reason: 'modes differ' },
      ]),
    ])
    const { state } = await engine.startRun({
      kind: 'probe',
      definitionName: 'p',
      definitionVersion: 'v1',
      runId: 'p2',
    })
    expect(await refusal(engine, 'p2', 'v2')).toEqual([
      {
        path: 'mode',
        current: 'v1',
        target: 'v2',
        reason: 'modes differ',
        threadId: state.rootThreadId,
      },
    ])
  })
})
