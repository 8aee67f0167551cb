import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, type Engine } from 'skein'
import { approval, decision, pendingApprovals } from 'skein/approval'
import { sqliteStore } from 'skein/sqlite'
import { defineOrderedWorkflow, defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'

// defineOrderedWorkflow: the nodes as a list, each after the nodes it runs after. It is the
// record form's workflow (same nodes, shape and order), so it runs, replays and versions alike;
// its types are checked by test/types/ordered-workflow.types.ts.
const listed = defineOrderedWorkflow({
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
const byId = defineWorkflow({
  name: 'release',
  nodes: {
    draft: { run: ({ input }) => ({ text: `About ${input.topic}` }) },
    review: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    publish: {
      after: ['review'],
      when: ({ results }) => results.review.outcome === 'approve',
      run: ({ results }) => ({ published: results.draft.text }),
    },
  },
})

let engine: Engine | undefined
let dir: string | undefined
afterEach(async () => {
  await engine?.stop()
  engine = undefined
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

describe('defineOrderedWorkflow', () => {
  it('defines the same workflow as the record form: nodes, order and shape', () => {
    expect(listed.order).toEqual(['draft', 'review', 'publish'])
    expect(listed.shape).toEqual(byId.shape)
    expect(Object.keys(listed.nodes)).toEqual(Object.keys(byId.nodes))
    expect(listed.nodes.review.after).toEqual(['draft'])
    expect(listed.nodes.review).not.toHaveProperty('id')
    expect({ version: listed.version, concurrency: listed.concurrency }).toEqual({
      version: 'v1',
      concurrency: 8,
    })
  })

  it('runs through a gate to completion on a SQLite file, as the record form does', async () => {
    dir = mkdtempSync(join(tmpdir(), 'skein-ordered-'))
    engine = createEngine({
      store: sqliteStore({ path: join(dir, 'runs.db') }),
      modules: [workflow({ definitions: [listed] }), approval()],
    })
    const { runId, state } = await engine.start(listed, { topic: 'Skein' })
    expect(state.status).toBe('running')
    const [item] = (await engine.project(runId, pendingApprovals)).items
    expect(item?.title).toBe('Publish?')
    const done = await engine.signal(runId, [decision(item!.approvalId, 'approve')])
    expect(done.status).toBe('completed')
    expect(done.output).toMatchObject({
      draft: { text: 'About Skein' },
      review: { outcome: 'approve' },
      publish: { published: 'About Skein' },
    })
  })

  it('refuses a list out of dependency order, unnamed or repeated nodes, and non-lists', () => {
    const define = defineOrderedWorkflow as (config: unknown) => unknown
    const run = () => 1
    expect(() =>
      define({
        name: 'x',
        nodes: [
          { id: 'a', after: ['b'], run },
          { id: 'b', run },
        ],
      }),
    ).toThrow(/node a names "b", which is listed after it/)
    expect(() =>
      define({
        name: 'x',
        nodes: [
          { id: 'a', run, onFailure: { fallback: 'b' } },
          { id: 'b', run },
        ],
      }),
    ).toThrow(/node a names "b", which is listed after it/)
    expect(() => define({ name: 'x', nodes: [{ id: 'a', after: ['zz'], run }] })).toThrow(
      /unknown node "zz"/,
    )
    expect(() =>
      define({
        name: 'x',
        nodes: [
          { id: 'a', run },
          { id: 'a', run },
        ],
      }),
    ).toThrow(/node id "a" is listed twice/)
    expect(() => define({ name: 'x', nodes: [{ run }] })).toThrow(/every node needs an id/)
    expect(() => define({ name: 'x', nodes: { a: { run } } })).toThrow(/nodes must be a list/)
    expect(() => define({ name: 'x', nodes: [] })).toThrow(/at least one node/)
    expect(() => define({ nodes: [{ id: 'a', run }] })).toThrow(/name is required/)
  })

  it('passes version, default and concurrency through', () => {
    const wf = defineOrderedWorkflow({
      name: 'w',
      version: 'v2',
      default: true,
      concurrency: 2,
      nodes: [{ id: 'a', run: () => 1 }],
    })
    expect({ version: wf.version, default: wf.default, concurrency: wf.concurrency }).toEqual({
      version: 'v2',
      default: true,
      concurrency: 2,
    })
  })

  it('its generated signature is what scripts/gen-ordered-workflow.mjs writes', () => {
    const file = 'src/modules/workflow/ordered-signature.ts'
    // Bounded: a hung child would block this worker (no test timeout fires in a sync call).
    const bounded = { timeout: 12_000, killSignal: 'SIGKILL' } as const
    const generated = execFileSync(
      process.execPath,
      ['scripts/gen-ordered-workflow.mjs', '--stdout'],
      bounded,
    )
    const formatted = execFileSync(
      'node_modules/.bin/biome',
      ['format', `--stdin-file-path=${file}`],
      { ...bounded, input: generated, encoding: 'utf8' },
    )
    expect(formatted).toBe(readFileSync(file, 'utf8'))
  })
})
