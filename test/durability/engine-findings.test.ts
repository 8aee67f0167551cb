// Engine problems found by the durability suites, pinned as tests (fixed ones stay as regression
// tests; an open one would be marked `it.fails` until fixed).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, type Observation } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { faultyStore, manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { freshPath } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-findings-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const nap = defineWorkflow({
  name: 'nap',
  nodes: { s: { run: (ctx) => ctx.sleep(1000) }, done: { after: ['s'], run: () => 'woke' } },
})

describe('engine findings', () => {
  // create-engine.ts starts the scheduler with `rt.wakeDue(runId).catch(() => undefined)`: when
  // the timer's wake cannot load the run (a transient store error), the error is dropped, no
  // observation is emitted and the deadline is not rescheduled. The run stays parked on a
  // timer that already fired until someone calls wake/rescan or the process restarts.
  it('a timer wake that hits a transient store error is observed and retried', async () => {
    const inner = sqliteStore({ path: freshPath(dir, 'timer.db') })
    const store = faultyStore(inner)
    const clock = manualClock()
    const observed: Observation[] = []
    const engine = createEngine({
      store,
      modules: [workflow({ definitions: [nap] })],
      clock,
      observer: (o) => void observed.push(o),
    })
    try {
      const { runId } = await engine.start(nap)
      store.failNext('read', 'before') // the timer wake's first read of the log
      await clock.advance(1000)
      await (await engine.runtime).idle()
      expect(store.injected).toHaveLength(1)
      expect(observed.some((o) => o.error !== undefined)).toBe(true)
      // The fault has cleared: the deadline must still be honoured without an external wake.
      await clock.advance(60_000)
      await (await engine.runtime).idle()
      expect((await engine.getRun(runId)).status).toBe('completed')
    } finally {
      await engine.stop()
      await inner.close()
    }
  })
})
