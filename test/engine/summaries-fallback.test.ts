import { describe, expect, it } from 'vitest'
import { createEngine, type EventStore, memoryStore } from '../../src/index.js'
import { defineWorkflow, workflow } from '../../src/modules/workflow/index.js'

const quick = defineWorkflow({ name: 'quick', nodes: { only: { run: () => 1 } } })
const stuck = defineWorkflow({ name: 'stuck', nodes: { w: { run: (ctx) => ctx.waitFor('go') } } })

describe('listRunSummaries on a store without listSummaries', () => {
  it('pages newest first by folding only the runs it looks at', async () => {
    const { listSummaries: _left, ...rest } = memoryStore()
    const store: EventStore = { ...rest, capabilities: { ...rest.capabilities, summaries: false } }
    const engine = createEngine({ store, modules: [workflow({ definitions: [quick, stuck] })] })
    for (const runId of ['a', 'b', 'c', 'd']) {
      await engine.start(runId === 'c' ? stuck : quick, undefined, { runId })
    }
    const first = await engine.listRunSummaries({ limit: 3 })
    expect(first.runs.map((r) => r.runId)).toEqual(['d', 'c', 'b'])
    const second = await engine.listRunSummaries({ limit: 3, cursor: first.nextCursor! })
    expect(second).toMatchObject({ runs: [{ runId: 'a', status: 'completed' }], nextCursor: null })
    const running = await engine.listRunSummaries({ status: 'running' })
    expect(running.runs.map((r) => r.runId)).toEqual(['c'])
    const oldest: string[] = []
    let cursor: string | undefined
    do {
      const page = await engine.listRunSummaries({ order: 'oldest', limit: 1, cursor })
      oldest.push(...page.runs.map((r) => r.runId))
      cursor = page.nextCursor ?? undefined
    } while (cursor !== undefined && oldest.length < 10)
    expect(oldest).toEqual(['a', 'b', 'c', 'd'])
    const quickOnes = await engine.listRunSummaries({ definitionName: 'quick', order: 'oldest' })
    expect(quickOnes.runs.map((r) => r.runId)).toEqual(['a', 'b', 'd'])
    await expect(engine.listRunSummaries({ limit: 0 })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
    })
    await engine.stop()
  })
})
