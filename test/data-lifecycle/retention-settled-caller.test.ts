import { defineEffect, defineModule, memorySnapshotStore, memoryStore } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { untilSwept } from '../support/swept.js'

// A retention sweep may delete a run that has just finished while the caller that started it
// still waits for it to settle (its last snapshot save in flight): the caller is answered with
// the run's finished state, not with nothing (docs/data-lifecycle.md, "Retention").

const newEngine = enginesStoppedAfterEach()
const fx = defineModule({
  namespace: 'rs',
  effects: { step: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n }) },
})
const quick = defineWorkflow({
  name: 'quick',
  nodes: { a: { run: (ctx) => ctx.invoke('rs.step', { n: 1 }) } },
})

it('a settled start whose run a sweep deleted before it settled gets the finished state', async () => {
  const clock = manualClock()
  const store = memoryStore()
  // The run's last snapshot save waits until the test lets it go.
  const inner = memorySnapshotStore()
  let saving!: () => void
  const saved = new Promise<void>((resolve) => {
    saving = resolve
  })
  let saveStarted = false
  const snapshotStore = {
    ...inner,
    save: async (snapshot: Parameters<typeof inner.save>[0]) => {
      // Only the save after the run finished waits (earlier ones are the run's own steps).
      if (JSON.stringify(snapshot.data).includes('"completed"')) {
        saveStarted = true
        await saved
      }
      return inner.save(snapshot)
    },
    latest: inner.latest.bind(inner),
    list: inner.list.bind(inner),
    prune: inner.prune.bind(inner),
  }
  const engine = newEngine({
    store,
    snapshotStore,
    snapshotEvery: 1,
    modules: [fx, workflow({ definitions: [quick] })],
    clock,
    retention: { finishedAfterMs: 1000, intervalMs: 1000 },
  })
  const started = engine.start(quick, undefined, { runId: 'short', wait: 'settled' })
  for (let i = 0; i < 500 && !saveStarted; i++) await new Promise((r) => setTimeout(r, 2))
  expect(saveStarted).toBe(true)
  await clock.advance(5000)
  await untilSwept(engine, clock, 1)
  saving()
  const { state } = await started
  expect(state?.status).toBe('completed')
  await expect(engine.getRun('short')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
})
