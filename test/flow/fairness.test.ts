// Fairness between keys: a key with 1,000 runs queued does not hold up a key started after it.
// Admission order is read from the store's feed (commit order), not from timings.
import {
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type EventStore,
  RuntimeEvents,
} from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../support/children.js'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('flow-fairness').filter((k) => k.name !== 'memory')
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.stop()))
})

/** Every event in commit order (the store's feed). */
async function feed(store: EventStore): Promise<Array<{ runId: string; type: string }>> {
  const out: Array<{ runId: string; type: string }> = []
  let after = 0
  for (;;) {
    const page = await store.feed!.readAfter(after, 1000)
    for (const entry of page) out.push({ runId: entry.event.runId, type: entry.event.type })
    if (page.length < 1000) return out
    after = page[page.length - 1].position
  }
}

describe.each(kinds)('flow control: fairness between keys ($name)', (kind) => {
  it('key A with 1,000 queued runs, key B with 5 started after: each B run is admitted within the first 20 admissions after it was queued', async () => {
    let open: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const step = defineEffect({ execute: async () => gate })
    const mod = defineModule({ namespace: 'fair', effects: { step } })
    const drained = defineWorkflow({
      name: 'drained',
      flow: { concurrency: { limit: 3, key: (input: { key: string }) => input.key } },
      nodes: { step: { run: (ctx) => ctx.invoke(step, {}) } },
    })
    const store = kind.fresh().open()
    const engine = createEngine({ store, modules: [workflow({ definitions: [drained] }), mod] })
    engines.push(engine)
    for (let from = 0; from < 1000; from += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          engine.start(drained, { key: 'A' }, { runId: `a${from + i}` }),
        ),
      )
    }
    const bIds = ['b0', 'b1', 'b2', 'b3', 'b4']
    for (const runId of bIds) await engine.start(drained, { key: 'B' }, { runId })
    expect((await engine.queues()).map((q) => [q.key, q.active, q.queued])).toEqual([
      ['A', 3, 997],
      ['B', 3, 2],
    ])
    open()
    // Every run finished: no key has a run queued or admitted.
    let queues: Awaited<ReturnType<typeof engine.queues>> = []
    await waitFor(
      'every run to finish (no key with a run queued or admitted)',
      async () => (queues = await engine.queues()).length === 0,
      {
        withinMs: 20_000,
        seen: () => JSON.stringify(queues.map((q) => [q.key, q.active, q.queued])),
      },
    )
    const events = await feed(store)
    const admissions = events.filter((e) => e.type === RuntimeEvents.runAdmitted)
    expect(admissions).toHaveLength(1005)
    const within: number[] = []
    for (const runId of bIds) {
      const queuedAt = events.findIndex((e) => e.runId === runId)
      const admittedAt = events.findIndex(
        (e) => e.runId === runId && e.type === RuntimeEvents.runAdmitted,
      )
      // Admissions of any key from its start to its own, its own included.
      within.push(
        events.slice(queuedAt, admittedAt + 1).filter((e) => e.type === RuntimeEvents.runAdmitted)
          .length,
      )
    }
    console.log(
      `SCORE flow-fairness-${kind.name} a_queued=997 b_admitted_within=${within.join(',')}`,
    )
    for (const n of within) expect(n).toBeLessThanOrEqual(20)
  }, 240_000)
})
