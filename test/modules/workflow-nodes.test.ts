import { describe, expect, it } from 'vitest'
import { createEngine } from '../../src/index.js'
import { approval, decision, pendingApprovals } from '../../src/modules/approval/index.js'
import { defineWorkflow, workflow, workflowNodes } from '../../src/modules/workflow/index.js'

const review = defineWorkflow({
  name: 'review',
  nodes: {
    draft: { run: () => ({ text: 'x' }) },
    approve: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Ship?' }) },
    publish: {
      after: ['approve'],
      when: ({ results }) => results.approve.outcome === 'approve',
      run: () => 'published',
    },
    broken: {
      after: ['approve'],
      onFailure: 'skip',
      run: () => {
        throw new Error('no')
      },
    },
  },
})

describe('workflowNodes projection', () => {
  it('follows each node from absent (pending) to waiting, done, skipped or failed', async () => {
    const engine = createEngine({ modules: [workflow({ definitions: [review] }), approval()] })
    const { runId, threadId } = await engine.start(review)
    const parked = await engine.project(runId, workflowNodes)
    expect(parked.threads[threadId]).toEqual({
      draft: { status: 'done', seq: expect.any(Number) },
      approve: { status: 'waiting', directive: 'gate', seq: expect.any(Number) },
    })
    const [item] = (await engine.project(runId, pendingApprovals)).items
    await engine.signal(runId, [decision(item.approvalId, 'reject')])
    const done = (await engine.project(runId, 'workflowNodes')).threads[threadId]
    expect(done.approve.status).toBe('done')
    expect(done.publish.status).toBe('skipped')
    expect(done.broken.status).toBe('skipped')
    await engine.stop()
  })
})
